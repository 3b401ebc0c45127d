import Foundation
import Prefs

/// The workloads of "SQLiteStore at memory speed": large values, power-safe writes, several
/// processes, opening a large store.
extension Workloads {
    /// A 1 KB value written over 10,000 stored keys, against a raw upsert of the same bytes; and
    /// the SQLite file's size once it holds them all, against their size.
    ///
    /// Measured one after the other, not in turns: the store's repetitions follow each other
    /// without a flush, so its journal, which these writes fill faster than a background move
    /// empties it, grows as it would under a steady stream of large writes, up to where a write
    /// moves it itself (a flush between turns would leave that out).
    func oneKilobyteValues() throws -> (raw: Double, prefs: Double, fileRatio: Double) {
        let keys = 10_000
        let text = String(repeating: "0123456789abcdef", count: 64)  // 1,024 bytes
        let raw = RawSQLite(path: Scratch.path("raw-1kb.sqlite"))
        let rawBytes = Array(text.utf8)
        for index in 0..<keys { raw.write(key: "k\(index)", bytes: rawBytes) }
        let rawWrites = 1_000
        let rawTime = Measure.nanosecondsPerOperation(operations: rawWrites, repetitions: sizes.repetitions) {
            for index in 0..<rawWrites { raw.write(key: "k\((index * 7_919) % keys)", bytes: rawBytes) }
        }
        let path = Scratch.path("prefs-1kb.sqlite")
        var prefsTime = Double.nan
        do {
            let store = try SQLiteStore(path: path)
            let value = PropertyListValue.string(text)
            for index in 0..<keys { try store.setValue(value, forKey: "k\(index)") }
            let writes = sizes.writes / 5
            prefsTime = try Measure.nanosecondsPerOperation(
                operations: writes, repetitions: sizes.repetitions
            ) {
                for index in 0..<writes { try store.setValue(value, forKey: "k\((index * 7_919) % keys)") }
            }
            try store.flush()
        }
        // Closed: SQLite moved its WAL into the file.
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return (rawTime, prefsTime, Double(size) / Double(keys * 1_024))
    }

    /// A `.powerSafe` write (synced before it returns) against a raw upsert committed with
    /// `synchronous=FULL`, in turns.
    func powerSafeAgainstRawFull() throws -> Measure.SideBySide {
        let writes = 200
        let raw = RawSQLite(path: Scratch.path("raw-full.sqlite"), synchronous: "FULL")
        let store = try SQLiteStore(
            path: Scratch.path("powersafe.sqlite"), options: .init(durability: .powerSafe))
        return try Measure.sideBySide(operations: writes, repetitions: sizes.repetitions) {
            for index in 0..<writes { raw.write(key: "k\(index % 100)", value: Int64(index)) }
        } _: {
            for index in 0..<writes { try store.setValue(.integer(Int64(index)), forKey: "k\(index % 100)") }
        }
    }
}

extension Processes {
    /// 4 processes × `writes` distinct writes through `SQLiteStore` against raw SQLite commits.
    ///
    /// Returns the fraction kept and the ratio of the times the writes took (the median of
    /// `repetitions` runs of each, on fresh files). The processes start together at an agreed
    /// instant once their files are open, so starting a process is not counted; the time ends
    /// when the last one's last write returned.
    static func fourWriters(writes: Int, repetitions: Int, lmdb: LMDB?) throws -> FourWriters {
        func writingTime(_ mode: String, _ path: String) throws -> Double {
            let startAt = Date().timeIntervalSince1970 + 0.5
            let children = try (0..<4).map {
                try startWithOutput([mode, path, "p\($0)", String(writes), String(startAt)])
            }
            var finished: [Double] = []
            for (process, output) in children {
                let printed = String(
                    decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                finished.append(Double(printed.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan)
            }
            return (finished.max() ?? .nan) - startAt
        }
        var rawTimes: [Double] = []
        var prefsTimes: [Double] = []
        var lmdbTimes: [Double] = []
        var kept = 1.0
        var lmdbKept = 1.0
        for run in 0..<repetitions {
            rawTimes.append(try writingTime("raw-write", Scratch.path("multi-raw-\(run).sqlite")))
            let path = Scratch.path("multi-\(run).sqlite")
            prefsTimes.append(try writingTime("sqlite-write", path))
            kept = min(kept, Double(try SQLiteStore(path: path).snapshot().count) / Double(4 * writes))
            if let lmdb {
                let lmdbPath = Scratch.path("multi-\(run).mdb")
                lmdbTimes.append(try writingTime("lmdb-write", lmdbPath))
                let environment = try lmdb.open(path: lmdbPath, syncEachCommit: false)
                var found = 0
                for process in 0..<4 {
                    for index in 0..<writes
                    where try environment.integer(Array("p\(process).\(index)".utf8)) == index {
                        found += 1
                    }
                }
                lmdbKept = min(lmdbKept, Double(found) / Double(4 * writes))
            }
        }
        let prefsTime = Measure.median(prefsTimes)
        return FourWriters(
            kept: kept, timeRatio: prefsTime / Measure.median(rawTimes),
            lmdbRatio: lmdb == nil ? nil : prefsTime / Measure.median(lmdbTimes),
            lmdbKept: lmdb == nil ? nil : lmdbKept)
    }

    /// What ``fourWriters(writes:repetitions:lmdb:)`` measured.
    struct FourWriters {
        /// The fraction of Prefs's writes found afterwards.
        let kept: Double
        /// Prefs's wall time ÷ raw SQLite's.
        let timeRatio: Double
        /// Prefs's wall time ÷ LMDB's (`nil` without LMDB).
        let lmdbRatio: Double?
        /// The fraction of LMDB's writes found afterwards.
        let lmdbKept: Double?
    }

    /// 8 processes × 500 `update { $0[.n] += 1 }`: 1 when the count is exactly 4,000.
    static func eightIncrementers() throws -> Double {
        let path = Scratch.path("increments.sqlite")
        let children = try (0..<8).map { _ in try start(["sqlite-increment", path, "500"]) }
        for child in children { child.waitUntilExit() }
        return try SQLiteStore(path: path).value(forKey: "n") == .integer(4_000) ? 1 : 0
    }

    /// Of `trials` writes in another process, the fraction that a read here, started after the
    /// write returned there, saw.
    static func readAfterWrite(trials: Int) throws -> Double {
        let path = Scratch.path("read-after-write.sqlite")
        let store = try SQLiteStore(path: path)
        _ = store.value(forKey: "k0")
        let (process, output) = try startWithOutput(["ack-writer", path, String(trials)])
        let lines = LineReader(output.fileHandleForReading)
        var seen = 0
        while let line = lines.next(), let index = Int(line) {
            if store.value(forKey: "k\(index)") == .integer(Int64(index)) { seen += 1 }
        }
        process.waitUntilExit()
        return Double(seen) / Double(trials)
    }

    /// Milliseconds from starting to open a 100,000-key store until its first read (the median
    /// of `repetitions` openings, each in a process of its own), and the resident memory it adds
    /// to an empty process (MB).
    static func largeStore(repetitions: Int) throws -> (
        openMilliseconds: Double, addedMegabytes: Double, afterReadingAllMegabytes: Double
    ) {
        let path = Scratch.path("large.sqlite")
        do {
            let store = try SQLiteStore(path: path)
            try store.transaction { t in
                for index in 0..<100_000 { t["key.\(index)"] = .string("value number \(index)") }
            }
            try store.flush()
        }
        var opens: [Double] = []
        for _ in 0..<max(3, repetitions) { opens.append(Double(try output(of: ["open", path])) ?? .nan) }
        let empty = Double(try output(of: ["rss-empty"])) ?? .nan
        let holding = Double(try output(of: ["rss", path])) ?? .nan
        let afterReading = Double(try output(of: ["rss-read-all", path])) ?? .nan
        return (Measure.percentile(opens, 0.5), holding - empty, afterReading - empty)
    }
}

/// Reads a pipe line by line as the lines arrive.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}
