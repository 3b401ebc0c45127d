import Foundation
import Prefs
import PrefsChildWork

#if PREFS_POSTGRESQL
    import PrefsPostgres
#endif

/// Workloads with several processes: this same program started again with `--child MODE …`.
enum Processes {
    /// Runs a child mode (called from `main` when the first argument is `--child`).
    static func runChild(_ arguments: [String]) throws {
        switch arguments.first {
        case "sqlite-write":
            // PATH PREFIX COUNT START: opens the store, waits for START (seconds since 1970),
            // writes, and prints when its last write returned.
            let store = try SQLiteStore(path: arguments[1])
            waitUntil(Double(arguments[4]) ?? 0)
            for index in 0..<(Int(arguments[3]) ?? 0) {
                try store.setValue(.integer(Int64(index)), forKey: "\(arguments[2]).\(index)")
            }
            print(Date().timeIntervalSince1970)
        case "profile":
            // KIND PATH N: N typed writes (or reads) in a loop, to run under a profiler; `fill`
            // stores N keys in one transaction; `growth KEYS` runs one workload of the report.
            if arguments[1] == "growth" {
                // `growth KEYS`: the write-growth workload alone, ns per write with KEYS keys stored.
                let keys = Int(arguments[2]) ?? 100
                print(
                    "\(try Workloads(sizes: .full).sqliteWrite(withKeysStored: keys)) ns per write at \(keys) keys"
                )
                return
            }
            if arguments[1] == "fill" {
                let store = try SQLiteStore(path: arguments[2])
                try store.transaction { t in
                    for index in 0..<(Int(arguments[3]) ?? 0) {
                        t["key.\(index)"] = .string("value number \(index)")
                    }
                }
                try store.flush()  // into SQLite, as the benchmark's large store is
                return
            }
            if arguments[1] == "write1k" {
                let store = try SQLiteStore(path: arguments[2])
                let value = PropertyListValue.string(String(repeating: "0123456789abcdef", count: 64))
                let count = Int(arguments[3]) ?? 0
                let start = DispatchTime.now().uptimeNanoseconds
                for index in 0..<count { try store.setValue(value, forKey: "k\((index * 7_919) % 10_000)") }
                print(
                    "\(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)) ns per 1 KB write"
                )
                return
            }
            let prefs = Preferences(store: try SQLiteStore(path: arguments[2]))
            let keys = (0..<100).map { Preferences.Key<Int>("k\($0)", default: 0) }
            let count = Int(arguments[3]) ?? 1_000_000
            let start = DispatchTime.now().uptimeNanoseconds
            if arguments[1] == "read" {
                // One key, as `sqlite_read_ns` reads it.
                let key = keys[50]
                for _ in 0..<count { consume(prefs[key]) }
            } else {
                for index in 0..<count { prefs[keys[index % 100]] = index }
            }
            print(
                "\(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)) ns per \(arguments[1])"
            )
        case "raw-write":
            // The same with raw SQLite commits.
            let raw = RawSQLite(path: arguments[1])
            waitUntil(Double(arguments[4]) ?? 0)
            for index in 0..<(Int(arguments[3]) ?? 0) {
                raw.write(key: "\(arguments[2]).\(index)", value: Int64(index))
            }
            print(Date().timeIntervalSince1970)
        case "sqlite-increment":
            try ChildWork.increments(
                of: "n", in: Preferences(store: try SQLiteStore(path: arguments[1])),
                count: Int(arguments[2]) ?? 0)
        case "ack-writer":
            // Writes k<i> = i, then prints i: the parent reads k<i> once the line arrives.
            try ChildWork.acknowledgedWrites(
                to: Preferences(store: try SQLiteStore(path: arguments[1])), pauseMicroseconds: 200,
                count: Int(arguments[2]) ?? 0
            ) { index in ChildWork.say("\(index)") }
        case "open":
            let start = DispatchTime.now().uptimeNanoseconds
            let store = try SQLiteStore(path: arguments[1])
            precondition(store.value(forKey: "key.0") != nil)
            print(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        case "rss-empty":
            print(residentMegabytes())
        case "defaults-write":
            let defaults = UserDefaults(suiteName: arguments[1])!
            for index in 0..<(Int(arguments[3]) ?? 0) {
                defaults.set(index, forKey: "\(arguments[2]).\(index)")
                defaults.synchronize()
            }
        case "stamp-writer":
            // Writes the wall-clock time, so the observing parent can tell how long it took.
            let store = try SQLiteStore(path: arguments[1])
            for _ in 0..<(Int(arguments[2]) ?? 0) {
                try store.setValue(.double(Date().timeIntervalSince1970), forKey: "stamp")
                usleep(20_000)
            }
        #if PREFS_POSTGRESQL
            case "pg-fleet-observer":
                try PostgresFleet.observe(
                    url: arguments[1], namespace: arguments[2], writes: Int(arguments[3]) ?? 0)
            case "pg-fleet-writer":
                try PostgresFleet.write(
                    url: arguments[1], namespace: arguments[2], writes: Int(arguments[3]) ?? 0)
            case "pg-stamp-writer":
                let store = try PostgresStore(url: arguments[1], namespace: arguments[2])
                for _ in 0..<(Int(arguments[3]) ?? 0) {
                    try store.setValue(.double(Date().timeIntervalSince1970), forKey: "stamp")
                    usleep(20_000)
                }
        #endif
        case "idle":
            // Holds COUNT stores with an observer each, then reports what SECONDS of idling cost.
            let count = Int(arguments[2]) ?? 50
            var stores: [SQLiteStore] = []
            var observations: [StoreObservation] = []
            for index in 0..<count {
                let store = try SQLiteStore(path: "\(arguments[1])/idle-\(index).sqlite")
                try store.setValue(.integer(1), forKey: "k")
                observations.append(store.observe { _ in })
                stores.append(store)
            }
            usleep(300_000)  // settle: the watchers' first look
            let before = ThreadUsage.now()
            usleep(UInt32((Double(arguments[3]) ?? 10) * 1_000_000))
            let after = ThreadUsage.now()
            let seconds = Double(arguments[3]) ?? 10
            print(
                after.cpuMilliseconds - before.cpuMilliseconds,
                after.busiestWakeupsPerSecond(since: before, seconds: seconds))
            withExtendedLifetime((stores, observations)) {}
        case "rss":
            let store = try SQLiteStore(path: arguments[1])
            precondition(!store.keys().isEmpty)
            print(residentMegabytes())
        default:
            throw BenchError("unknown child mode \(arguments.first ?? "")")
        }
    }

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
