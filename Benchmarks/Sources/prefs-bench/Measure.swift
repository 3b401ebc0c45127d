import Foundation
import Prefs

/// Timing helpers: every figure is the median of several repetitions, measured in this run.
enum Measure {
    /// Nanoseconds per operation of `body`, which runs `operations` operations; the median of
    /// `repetitions` runs, after one warm-up run.
    static func nanosecondsPerOperation(operations: Int, repetitions: Int, _ body: () throws -> Void) rethrows
        -> Double
    {
        try body()  // warm-up: caches, lazily opened files, page faults
        var samples: [Double] = []
        for _ in 0..<repetitions {
            let elapsed = try ContinuousClock().measure(body)
            samples.append(elapsed.nanoseconds / Double(operations))
        }
        return median(samples)
    }

    /// How many turns of each loop ``sideBySide(operations:secondOperations:repetitions:_:_:settle:)`` callers take
    /// per repetition of the other figures (with as many operations in all).
    static let turnsPerRepetition = 5

    /// Two loops compared with each other, run in turns.
    ///
    /// Each goes first every other round (a b, b a, a b, …), so that neither a slower stretch of
    /// the machine nor running second weighs on one alone, after one warm-up run of each.
    /// `settle` runs untimed after each run (to finish what a run left for the background, so
    /// the next run does not pay for it).
    ///
    /// `operations` is how many operations each loop runs, or the first's when `secondOperations`
    /// gives the second's (a raw SQLite commit takes twenty times a journal write: as many of
    /// each would make one turn twenty times the other's length).
    static func sideBySide(
        operations: Int, secondOperations: Int? = nil, repetitions: Int, _ first: () throws -> Void,
        _ second: () throws -> Void, settle: () -> Void = {}
    ) rethrows -> SideBySide {
        var samples: ([Double], [Double]) = ([], [])
        func time(_ body: () throws -> Void, _ operations: Int) throws -> Double {
            defer { settle() }
            return try ContinuousClock().measure(body).nanoseconds / Double(operations)
        }
        let counts = (operations, secondOperations ?? operations)
        _ = try time(first, counts.0)
        _ = try time(second, counts.1)
        for round in 0..<max(repetitions, 6) {
            if round % 2 == 0 {
                samples.0.append(try time(first, counts.0))
                samples.1.append(try time(second, counts.1))
            } else {
                samples.1.append(try time(second, counts.1))
                samples.0.append(try time(first, counts.0))
            }
        }
        let ratios = zip(samples.0, samples.1).map { $1 / $0 }
        return SideBySide(
            first: median(samples.0), second: median(samples.1), ratio: median(ratios), ratios: ratios)
    }

    /// What ``sideBySide(operations:secondOperations:repetitions:_:_:settle:)`` measured.
    struct SideBySide {
        /// Nanoseconds per operation of the first loop: the median of its runs.
        let first: Double
        /// The same for the second.
        let second: Double
        /// The second's time ÷ the first's, round by round: the median of those ratios.
        ///
        /// A round's two runs come one right after the other. A slow stretch of the machine
        /// (seconds long, here) that takes in a few runs of one loop moves the ratio of the two
        /// medians; it hardly moves this.
        let ratio: Double
        /// Each round's ratio, in the order the rounds ran.
        let ratios: [Double]
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
        return sorted[index]
    }
}

/// A scratch folder for one benchmark run, removed at the end.
enum Scratch {
    static let folder: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-bench-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }()

    static func path(_ name: String) -> String {
        folder.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))").path
    }

    static func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}

/// The machine's CPU time by kind, from the first line of `/proc/stat` (Linux).
struct MachineCPU {
    let total: UInt64
    let steal: UInt64

    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        // user nice system idle iowait irq softirq steal …
        guard fields.count >= 8 else { return nil }
        return MachineCPU(total: fields.reduce(0, +), steal: fields[7])
    }

    func stealPercent(since start: MachineCPU) -> Double {
        guard total > start.total else { return 0 }
        return Double(steal - start.steal) / Double(total - start.total) * 100
    }
}

extension Duration {
    /// The duration in nanoseconds, with fractions.
    var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

/// State guarded by a lock, for the benchmark's own threads (Prefs' lock is not public).
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
