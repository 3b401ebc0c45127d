import Foundation
import Prefs

#if PREFS_POSTGRESQL
    import PrefsPostgres
#endif

/// Workloads with several processes: this same program started again with `--child MODE …`.
enum Processes {
    /// Starts this program again in a child mode; its standard output is the returned pipe.
    static func start(_ arguments: [String]) throws -> Process {
        try startWithOutput(arguments).process
    }

    static func output(of arguments: [String]) throws -> String {
        let (process, output) = try startWithOutput(arguments)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sleeps until the wall-clock instant `seconds` (since 1970).
    static func waitUntil(_ seconds: Double) {
        let remaining = seconds - Date().timeIntervalSince1970
        if remaining > 0 { usleep(UInt32(remaining * 1_000_000)) }
    }

    /// Starts a child mode with its output on a pipe; `environment` is added to this process's,
    /// and `input`, when given, becomes its standard input.
    static func startWithOutput(
        _ arguments: [String], environment: [String: String] = [:], input: Pipe? = nil
    ) throws -> (process: Process, output: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = ["--child"] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let input { process.standardInput = input }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        return (process, output)
    }

    /// 4 processes × `writes` distinct keys with `UserDefaults` + `synchronize()` on one suite:
    /// the fraction present afterwards.
    static func keptWithFoundation(writes: Int) throws -> Double {
        let suite = Scratch.path("multi-suite")
        let children = try (0..<4).map { try start(["defaults-write", suite, "p\($0)", String(writes)]) }
        for child in children { child.waitUntilExit() }
        // What is on disk, read from the file itself (a suite named by an absolute path is kept
        // in `<path>.plist`), not from this process's Foundation caches.
        let file = URL(fileURLWithPath: suite + ".plist")
        let stored: [String: Any]
        if let data = try? Data(contentsOf: file),
            let object = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: Any]
        {
            stored = object
        } else {
            stored = UserDefaults(suiteName: suite)?.persistentDomain(forName: suite) ?? [:]
        }
        return Double(stored.keys.count) / Double(4 * writes)
    }

    /// Milliseconds from a write in one process until an observer in this one sees it.
    static func crossProcessLatencies(samples: Int) throws -> [Double] {
        let path = Scratch.path("latency.sqlite")
        let store = try SQLiteStore(path: path)
        let latencies = LatencyLog()
        let observation = store.observe { change in
            guard case .set(.double(let written))? = change.values["stamp"] else { return }
            latencies.append((Date().timeIntervalSince1970 - written) * 1_000)
        }
        let writer = try start(["stamp-writer", path, String(samples)])
        writer.waitUntilExit()
        usleep(200_000)
        observation.cancel()
        return latencies.values
    }

    /// The CPU time (ms) a process holding `stores` open stores with observers spends idling for
    /// `seconds`, and the wake-ups per second of its busiest thread, from `/proc`.
    static func idleCost(stores: Int, seconds: Double) throws -> (
        cpuMilliseconds: Double, wakeupsPerSecond: Double
    ) {
        let folder = Scratch.path("idle")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let printed = try output(of: ["idle", folder, String(stores), String(seconds)])
        let numbers = printed.split(separator: " ").compactMap { Double($0) }
        guard numbers.count == 2 else { throw BenchError("the idle child printed '\(printed)'") }
        return (numbers[0], numbers[1])
    }

    static func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return .nan }
        return kilobytes / 1024
    }
}

final class LatencyLog: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [Double] = []
    func append(_ value: Double) { lock.withLock { samples.append(value) } }
    var values: [Double] { lock.withLock { samples } }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// This process's CPU time and each thread's context switches, from `/proc` (Linux).
struct ThreadUsage {
    var cpuMilliseconds: Double
    var switchesByThread: [String: Int]

    static func now() -> ThreadUsage {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var cpu = Double.nan
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        {
            // After the command's closing parenthesis: fields 3…; utime and stime are 14 and 15.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            if fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) {
                cpu = (user + system) / ticks * 1_000
            }
        }
        var switches: [String: Int] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)
            else {
                continue
            }
            var total = 0
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total +=
                    Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
            switches[task] = total
        }
        return ThreadUsage(cpuMilliseconds: cpu, switchesByThread: switches)
    }

    /// The context switches per second of the thread that switched most since `earlier`.
    func busiestWakeupsPerSecond(since earlier: ThreadUsage, seconds: Double) -> Double {
        let most =
            switchesByThread.map { task, count in count - (earlier.switchesByThread[task] ?? 0) }.max() ?? 0
        return Double(most) / seconds
    }
}
