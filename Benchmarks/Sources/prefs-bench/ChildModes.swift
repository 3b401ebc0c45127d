import Foundation
import Prefs

#if PREFS_POSTGRESQL
    import PrefsPostgres
#endif

/// What a child process of the benchmark does: the word after `--child`, then its arguments.
///
/// ```sh
/// prefs-bench --child sqlite-write PATH PREFIX COUNT START
/// ```
enum ChildMode: String {
    /// `PATH PREFIX COUNT START`: opens the store, waits for START (seconds since 1970), writes
    /// COUNT keys, and prints when its last write returned.
    case sqliteWrite = "sqlite-write"
    /// The same with raw SQLite commits.
    case rawWrite = "raw-write"
    /// The same with LMDB write transactions (unsynced, as ``LMDB/open(path:syncEachCommit:)``).
    case lmdbWrite = "lmdb-write"
    /// `KIND …`: one workload in a loop, to run under a profiler (see ``profile(_:)``).
    case profile
    /// `PATH COUNT`: `update { n += 1 }` COUNT times.
    case sqliteIncrement = "sqlite-increment"
    /// `PATH COUNT`: writes k<i> = i, then prints i; the parent reads k<i> once the line arrives.
    case ackWriter = "ack-writer"
    /// `PATH`: opens a store and reads one key; prints the milliseconds it took.
    case open
    /// Prints the resident memory of a process that did nothing.
    case rssEmpty = "rss-empty"
    /// `PATH`: opens a store, lists its keys, prints the resident memory.
    case rss
    /// `PATH`: opens a store, reads every value with a typed read, prints the resident memory.
    case rssReadAll = "rss-read-all"
    /// `SUITE PREFIX COUNT`: UserDefaults `set` and `synchronize()`, COUNT times.
    case defaultsWrite = "defaults-write"
    /// `PATH COUNT`: writes the wall-clock time every 20 ms, for an observing parent.
    case stampWriter = "stamp-writer"
    /// `FOLDER COUNT SECONDS`: holds COUNT stores with an observer each; prints the CPU
    /// milliseconds and the busiest thread's wake-ups per second of SECONDS idling.
    case idle
    #if PREFS_POSTGRESQL
        /// `URL NAMESPACE WRITES`: one observer of the PostgreSQL fleet.
        case pgFleetObserver = "pg-fleet-observer"
        /// `URL NAMESPACE WRITES`: the fleet's writer.
        case pgFleetWriter = "pg-fleet-writer"
        /// `URL NAMESPACE COUNT`: ``stampWriter`` on a PostgresStore.
        case pgStampWriter = "pg-stamp-writer"
        /// `PATH URL NAMESPACE WRITES`: an observer of the synced fleet (``SyncedFleet``).
        case syncedFleetObserver = "synced-fleet-observer"
        /// `PATH URL NAMESPACE WRITES`: the synced fleet's writer.
        case syncedFleetWriter = "synced-fleet-writer"
        /// `PATH URL NAMESPACE`: a replica of its own writing without end, which the synced
        /// fleet stops with SIGSTOP (a host gone silent in the middle of its syncing).
        case syncedFleetStalled = "synced-fleet-stalled"
    #endif

    /// Runs the mode named by `arguments[0]` with the arguments after it.
    static func run(_ arguments: [String]) throws {
        guard let name = arguments.first, let mode = ChildMode(rawValue: name) else {
            throw BenchError("unknown child mode \(arguments.first ?? "")")
        }
        try mode.run(Array(arguments.dropFirst()))
    }

    private func run(_ a: [String]) throws {
        func number(_ index: Int, or fallback: Int = 0) -> Int { Int(a[index]) ?? fallback }
        switch self {
        case .sqliteWrite, .rawWrite, .lmdbWrite:
            let write = try Self.writer(for: self, path: a[0])
            Processes.waitUntil(Double(a[3]) ?? 0)
            for index in 0..<number(2) { try write("\(a[1]).\(index)", Int64(index)) }
            print(Date().timeIntervalSince1970)
        case .profile: try Self.profile(a)
        case .sqliteIncrement:
            let prefs = Preferences(store: try SQLiteStore(path: a[0]))
            let count = Preferences.Key<Int>("n", default: 0)
            for _ in 0..<number(1) { try prefs.update { $0[count] += 1 } }
        case .ackWriter:
            // `k<i>` = i, then i on standard output at once (unbuffered): the parent reads the key
            // back after the line arrives.
            let store = try SQLiteStore(path: a[0])
            for index in 0..<number(1) {
                try store.setValue(.integer(Int64(index)), forKey: "k\(index)")
                FileHandle.standardOutput.write(Data("\(index)\n".utf8))
                usleep(200)
            }
        case .open:
            let start = DispatchTime.now().uptimeNanoseconds
            let store = try SQLiteStore(path: a[0])
            precondition(store.value(forKey: "key.0") != nil)
            print(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        case .rssEmpty: print(Processes.residentMegabytes())
        case .rss:
            let store = try SQLiteStore(path: a[0])
            precondition(!Preferences(store: store).storedKeys.isEmpty)
            print(Processes.residentMegabytes())
        case .rssReadAll:
            let prefs = Preferences(store: try SQLiteStore(path: a[0]))
            var total = 0
            for name in prefs.storedKeys {
                total &+= prefs[Preferences.Key<String>(name, default: "")].utf8.count
            }
            precondition(total > 0)
            print(Processes.residentMegabytes())
        case .defaultsWrite:
            let defaults = UserDefaults(suiteName: a[0])!
            for index in 0..<number(2) {
                defaults.set(index, forKey: "\(a[1]).\(index)")
                defaults.synchronize()
            }
        case .stampWriter: try Self.writeStamps(to: try SQLiteStore(path: a[0]), count: number(1))
        case .idle: try Self.idle(folder: a[0], stores: number(1, or: 50), seconds: Double(a[2]) ?? 10)
        #if PREFS_POSTGRESQL
            case .pgFleetObserver: try PostgresFleet.observe(url: a[0], namespace: a[1], writes: number(2))
            case .pgFleetWriter: try PostgresFleet.write(url: a[0], namespace: a[1], writes: number(2))
            case .pgStampWriter:
                try Self.writeStamps(to: try PostgresStore(url: a[0], namespace: a[1]), count: number(2))
            case .syncedFleetObserver:
                PostgresFleet.observe(
                    try SyncedFleet.store(path: a[0], url: a[1], namespace: a[2]), writes: number(3))
            case .syncedFleetWriter:
                try PostgresFleet.write(
                    to: try SyncedFleet.store(path: a[0], url: a[1], namespace: a[2]), writes: number(3))
            case .syncedFleetStalled:
                let store = try SyncedFleet.store(path: a[0], url: a[1], namespace: a[2])
                FileHandle.standardOutput.write(Data("ready\n".utf8))
                for index in 0... {
                    try store.setValue(.integer(Int64(index)), forKey: "stalled.\(index % 16)")
                    usleep(2_000)
                }
        #endif
        }
    }

    /// One write of `sqlite-write` (through SQLiteStore), `raw-write` (a raw commit) or
    /// `lmdb-write` (an LMDB write transaction).
    private static func writer(for mode: ChildMode, path: String) throws -> (String, Int64) throws -> Void {
        if mode == .lmdbWrite {
            let environment = try LMDB.shared.get().open(path: path, syncEachCommit: false)
            return { key, value in try environment.put(Array(key.utf8), Int(value)) }
        }
        if mode == .rawWrite {
            let raw = RawSQLite(path: path)
            return { key, value in raw.write(key: key, value: value) }
        }
        let store = try SQLiteStore(path: path)
        return { key, value in try store.setValue(.integer(value), forKey: key) }
    }

    /// `sustained KEYS [WRITES]`: the sustained-writes loop alone; `growth KEYS`: the write-growth
    /// workload alone; `growth-pair KEYS`: its ratio to 100 keys,
    /// the two stores written in turns as `sqlite_write_growth` measures it; `fill PATH N`: N keys in one transaction,
    /// flushed into SQLite as the benchmark's large store is; `write1k PATH N`: 1 KB writes;
    /// `read PATH N` or `write PATH N`: typed reads of one key, or writes over 100 keys;
    /// `read-string PATH N`: typed reads of a short string; `catch-up PATH N`: two stores of one
    /// file writing in turns; `read-catch-up PATH N`: a store reading after another's writes.
    private static func profile(_ a: [String]) throws {
        let count = Int(a.count > 2 ? a[2] : "") ?? 1_000_000
        switch a[0] {
        case "growth":
            let keys = Int(a[1]) ?? 100
            print(
                "\(try Workloads(sizes: .full).sqliteWrite(withKeysStored: keys)) ns per write at \(keys) keys"
            )
        case "growth-pair":
            let keys = Int(a[1]) ?? 100_000
            let pair = try Workloads(sizes: .full).sqliteWriteSideBySide(withKeysStored: keys)
            print("\(pair.ratio) (\(pair.first) ns at 100 keys, \(pair.second) at \(keys))")
            print("rounds:", pair.ratios.map { ($0 * 1_000).rounded() / 1_000 })
        case "fill":
            let store = try SQLiteStore(path: a[1])
            try store.transaction { t in
                for index in 0..<count { t["key.\(index)"] = .string("value number \(index)") }
            }
            try store.flush()
        case "sustained":
            // `sustained KEYS [WRITES]`: the sustained-writes loop alone (writes over KEYS keys,
            // then flush), ten turns, for a profiler: prints wall and process CPU per write.
            let keys = Int(a[1]) ?? 100_000
            let writes = a.count > 2 ? count : 100_000
            let store = try SQLiteStore(path: Scratch.path("profile-sustained.sqlite"))
            try store.transaction { t in for index in 0..<keys { t["k\(index)"] = .integer(Int64(index)) } }
            try store.flush()
            let names = (0..<writes).map { "k\(($0 * 7_919) % keys)" }
            let cpu = ProcessCPU.now()
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<10 {
                for index in 0..<writes { try store.setValue(.integer(Int64(index)), forKey: names[index]) }
                try store.flush()
            }
            let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(10 * writes)
            print("\(wall) ns wall, \(Double(ProcessCPU.now() - cpu) / Double(10 * writes)) ns CPU per write")
        case "write1k":
            let store = try SQLiteStore(path: a[1])
            let value = PropertyListValue.string(String(repeating: "0123456789abcdef", count: 64))
            let nanoseconds = try timed(count) { index in
                try store.setValue(value, forKey: "k\((index * 7_919) % 10_000)")
            }
            print("\(nanoseconds) ns per 1 KB write")
        case "catch-up":
            // Two stores of one file taking turns: each write first applies the other's records
            // (three for `second`, one for `first` per turn). What the turns cost above the same
            // writes without turns, per record applied.
            let first = try SQLiteStore(path: a[1])
            let second = try SQLiteStore(path: a[1])
            func writeFirst(_ index: Int) throws {
                for k in 0..<3 {
                    try first.setValue(.integer(Int64(index)), forKey: "first\(k).\(index % 1_000)")
                }
            }
            func writeSecond(_ index: Int) throws {
                try second.setValue(.integer(Int64(index)), forKey: "second.\(index % 1_000)")
            }
            let firstAlone = try timed(count, writeFirst)
            let secondAlone = try timed(count, writeSecond)
            let turns = try timed(count) { index in
                try writeFirst(index)
                try writeSecond(index)
            }
            print("\((turns - firstAlone - secondAlone) / 4) ns per record caught up")
        case "read-catch-up":
            // A store that only reads, catching up with another's records without the journal's
            // lock: per record applied.
            let writer = try SQLiteStore(path: a[1])
            let reader = try SQLiteStore(path: a[1])
            var reading: UInt64 = 0
            for round in 0..<max(1, count / 100) {
                for index in 0..<100 {
                    try writer.setValue(.integer(Int64(round)), forKey: "key.\(index)")
                }
                let start = DispatchTime.now().uptimeNanoseconds
                consume(reader.value(forKey: "key.0"))
                reading += DispatchTime.now().uptimeNanoseconds - start
            }
            print(
                "\(Double(reading) / Double(max(1, count / 100) * 100)) ns per record a read catches up with")
        case "read-string":
            let store = try SQLiteStore(path: a[1])
            try store.setValue(.string("dark"), forKey: "theme")
            let prefs = Preferences(store: store)
            let key = Preferences.Key<String>("theme", default: "")
            print("\(timed(count) { _ in consume(prefs[key]) }) ns per read of a short string")
        default:
            let prefs = Preferences(store: try SQLiteStore(path: a[1]))
            let keys = (0..<100).map { Preferences.Key<Int>("k\($0)", default: 0) }
            let nanoseconds =
                a[0] == "read"
                ? timed(count) { _ in consume(prefs[keys[50]]) }  // one key, as `sqlite_read_ns` reads it
                : timed(count) { index in prefs[keys[index % 100]] = index }
            print("\(nanoseconds) ns per \(a[0])")
        }
    }

    /// Nanoseconds per call of `body` over `count` calls.
    private static func timed(_ count: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count { try body(index) }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(max(count, 1))
    }

    /// Writes the wall-clock time every 20 ms, so the observing parent can tell how long it took.
    private static func writeStamps(to store: some PreferenceStore, count: Int) throws {
        for _ in 0..<count {
            try store.setValue(.double(Date().timeIntervalSince1970), forKey: "stamp")
            usleep(20_000)
        }
    }

    private static func idle(folder: String, stores count: Int, seconds: Double) throws {
        var stores: [SQLiteStore] = []
        var observations: [StoreObservation] = []
        for index in 0..<count {
            let store = try SQLiteStore(path: "\(folder)/idle-\(index).sqlite")
            try store.setValue(.integer(1), forKey: "k")
            observations.append(store.observe { _ in })
            stores.append(store)
        }
        usleep(300_000)  // settle: the watchers' first look
        let before = ThreadUsage.now()
        usleep(UInt32(seconds * 1_000_000))
        let after = ThreadUsage.now()
        print(
            after.cpuMilliseconds - before.cpuMilliseconds,
            after.busiestWakeupsPerSecond(since: before, seconds: seconds))
        withExtendedLifetime((stores, observations)) {}
    }
}
