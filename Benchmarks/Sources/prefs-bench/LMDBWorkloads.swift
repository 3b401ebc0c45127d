import Foundation
import Prefs

/// Prefs against LMDB in the same run: sustained writes counted whole, power-safe writes, reads.
extension Workloads {
    /// What ``sustainedWrites(keys:)`` measured, in nanoseconds per write (medians of the turns).
    struct Sustained {
        /// Prefs: the writes and the `flush()` after them, wall time ÷ writes: every move into
        /// SQLite the writes caused ran inside the timing.
        let prefs: Double
        /// Prefs the old way: wall time until the last write returned ÷ writes (the moves the
        /// writes left for the background not counted).
        let prefsWritesOnly: Double
        /// LMDB: one committed write transaction per write, wall time ÷ writes.
        let lmdb: Double
        /// Prefs ÷ LMDB, turn by turn: the median of those ratios.
        let ratio: Double
        /// SQLite's floor for the same writes ÷ LMDB, turn by turn.
        ///
        /// Each key's last value of the turn upserted into a table of `SQLiteStore`'s shape, in
        /// key order (as a checkpoint moves them), one prepared statement, the whole turn one
        /// transaction with `synchronous=FULL` (the store's; it also sets `fullfsync`, which only
        /// macOS heeds); the order and the keys' bytes made before the timing, bound where they
        /// lie. No journal, no encoding, no lock: the least work any design that keeps a row per
        /// key in SQLite does to hold these writes there.
        let sqliteFloorRatio: Double
        /// The process's CPU time (every thread: the background's too) ÷ writes, Prefs and LMDB.
        let prefsCPU: Double
        let lmdbCPU: Double
    }

    /// `sizes.writes` writes of an `Int` to key `(i × 7919) mod keys`, over a store of `keys`
    /// keys, then `flush()`, against the same writes to LMDB (`MDB_WRITEMAP | MDB_NOSYNC |
    /// MDB_NOMETASYNC`, a transaction per write: kept through `kill -9`, as `.committed` writes
    /// are), the two in turns, each going first every other round.
    func sustainedWrites(keys: Int, lmdb: LMDB) throws -> Sustained {
        let writes = sizes.writes
        let store = try SQLiteStore(path: Scratch.path("sustained-\(keys).sqlite"))
        try store.transaction { t in for index in 0..<keys { t["k\(index)"] = .integer(Int64(index)) } }
        try store.flush()
        let environment = try lmdb.open(path: Scratch.path("sustained-\(keys).mdb"), syncEachCommit: false)
        let keyBytes = (0..<keys).map { Array("k\($0)".utf8) }
        for index in 0..<keys { try environment.put(keyBytes[index], index) }
        let floor = RawSQLite(
            path: Scratch.path("sustained-floor-\(keys).sqlite"), synchronous: "FULL", storeShape: true)
        // The value as the store encodes an `Int` (a type byte and eight bytes).
        let floorValue: [UInt8] = [0x03] + withUnsafeBytes(of: Int64(1).littleEndian, Array.init)
        floor.inOneTransaction {
            for index in 0..<keys { floor.write(key: "k\(index)", bytes: floorValue, sequence: Int64(index)) }
        }
        var floorSequence = Int64(keys)
        // The keys in the order they are written, made before timing (as the growth workload).
        let order = (0..<writes).map { ($0 * 7_919) % keys }
        let names = order.map { "k\($0)" }
        // Each key written in the turn once, in the order of its name's bytes (SQLite's order),
        // as bytes bound where they lie.
        let floorNames = Set(names).map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }

        var prefsWhole: [Double] = []
        var prefsWritesOnly: [Double] = []
        var lmdbTimes: [Double] = []
        var prefsCPU: [Double] = []
        var lmdbCPU: [Double] = []
        var floorTimes: [Double] = []
        func floorTurn() {
            let start = ContinuousClock.now
            floor.inOneTransaction {
                floorValue.withUnsafeBufferPointer { value in
                    for name in floorNames {
                        floorSequence += 1
                        name.withUnsafeBufferPointer { key in
                            floor.write(key: key, value: value, sequence: floorSequence)
                        }
                    }
                }
            }
            floorTimes.append((ContinuousClock.now - start).nanoseconds / Double(writes))
        }
        func prefsTurn() throws {
            let cpu = ProcessCPU.now()
            let start = ContinuousClock.now
            for index in 0..<writes { try store.setValue(.integer(Int64(index)), forKey: names[index]) }
            let written = ContinuousClock.now
            try store.flush()
            let end = ContinuousClock.now
            prefsWritesOnly.append((written - start).nanoseconds / Double(writes))
            prefsWhole.append((end - start).nanoseconds / Double(writes))
            prefsCPU.append(Double(ProcessCPU.now() - cpu) / Double(writes))
        }
        func lmdbTurn() throws {
            let cpu = ProcessCPU.now()
            let start = ContinuousClock.now
            for index in 0..<writes { try environment.put(keyBytes[order[index]], index) }
            lmdbTimes.append((ContinuousClock.now - start).nanoseconds / Double(writes))
            lmdbCPU.append(Double(ProcessCPU.now() - cpu) / Double(writes))
        }
        try prefsTurn()  // warm-up of each, not counted
        try lmdbTurn()
        floorTurn()
        (prefsWhole, prefsWritesOnly, lmdbTimes, prefsCPU, lmdbCPU, floorTimes) = ([], [], [], [], [], [])
        for round in 0..<max(sizes.repetitions, 3) {
            if round % 2 == 0 {
                try prefsTurn()
                try lmdbTurn()
                floorTurn()
            } else {
                floorTurn()
                try lmdbTurn()
                try prefsTurn()
            }
        }
        return Sustained(
            prefs: Measure.median(prefsWhole), prefsWritesOnly: Measure.median(prefsWritesOnly),
            lmdb: Measure.median(lmdbTimes),
            ratio: Measure.median(zip(prefsWhole, lmdbTimes).map { $0 / $1 }),
            sqliteFloorRatio: Measure.median(zip(floorTimes, lmdbTimes).map { $0 / $1 }),
            prefsCPU: Measure.median(prefsCPU), lmdbCPU: Measure.median(lmdbCPU))
    }

    /// A `.powerSafe` write (synced before it returns) against an LMDB write transaction synced
    /// at its commit (`MDB_WRITEMAP`, no `MDB_NOSYNC`), 100 keys, in turns.
    func powerSafeAgainstLMDB(_ lmdb: LMDB) throws -> Measure.SideBySide {
        let writes = 200
        let environment = try lmdb.open(path: Scratch.path("powersafe.mdb"), syncEachCommit: true)
        let keyBytes = (0..<100).map { Array("k\($0)".utf8) }
        let store = try SQLiteStore(
            path: Scratch.path("powersafe-lmdb.sqlite"), options: .init(durability: .powerSafe))
        return try Measure.sideBySide(operations: writes, repetitions: sizes.repetitions) {
            for index in 0..<writes { try environment.put(keyBytes[index % 100], index) }
        } _: {
            for index in 0..<writes { try store.setValue(.integer(Int64(index)), forKey: "k\(index % 100)") }
        }
    }

    /// A typed read of an `Int` from a store of 1,000 keys against `mdb_get` of one in a read
    /// transaction (one kept and renewed for each read, reset after it: LMDB's advice for a
    /// thread that reads often), in turns.
    func readsAgainstLMDB(_ lmdb: LMDB) throws -> Measure.SideBySide {
        let environment = try lmdb.open(path: Scratch.path("reads.mdb"), syncEachCommit: false)
        let store = try SQLiteStore(path: Scratch.path("reads-lmdb.sqlite"))
        try store.transaction { t in for index in 0..<1_000 { t["k\(index)"] = .integer(Int64(index)) } }
        for index in 0..<1_000 { try environment.put(Array("k\(index)".utf8), index) }
        let prefs = Preferences(store: store)
        let key = Preferences.Key<Int>("k500", default: 0)
        let keyBytes = Array("k500".utf8)
        let reads = sizes.reads / Measure.turnsPerRepetition
        return try Measure.sideBySide(
            operations: reads, repetitions: sizes.repetitions * Measure.turnsPerRepetition
        ) {
            for _ in 0..<reads { consume(try environment.integer(keyBytes)) }
        } _: {
            for _ in 0..<reads { consume(prefs[key]) }
        }
    }
}

/// This process's CPU time, every thread's, in nanoseconds.
enum ProcessCPU {
    static func now() -> UInt64 { clock(CLOCK_PROCESS_CPUTIME_ID) }

    /// The calling thread's CPU time alone: the process's less this is what ran elsewhere (the
    /// store's background moves, its wake-ups).
    static func thisThread() -> UInt64 { clock(CLOCK_THREAD_CPUTIME_ID) }

    private static func clock(_ id: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(id, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
