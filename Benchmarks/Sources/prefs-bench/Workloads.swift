import Foundation
import Prefs

/// How big each workload is: `--quick` for a run under two minutes, the default for full sizes.
struct Sizes {
    let reads: Int
    let writes: Int
    let growthLarge: Int
    let plotSizes: [Int]
    let latencySamples: Int
    let repetitions: Int

    static let full = Sizes(
        reads: 1_000_000, writes: 100_000, growthLarge: 100_000, plotSizes: [100, 1_000, 10_000, 100_000],
        latencySamples: 200, repetitions: 5)
    static let quick = Sizes(
        reads: 200_000, writes: 20_000, growthLarge: 10_000, plotSizes: [100, 1_000, 10_000],
        latencySamples: 60,
        repetitions: 3)
}

/// Keeps the optimizer from removing reads whose results are otherwise unused.
@inline(never) func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The workloads, each returning Prefs' figure and its baseline's, measured side by side.
struct Workloads {
    let sizes: Sizes

    /// Typed reads through `Preferences` on `UserDefaultsStore` against plain `UserDefaults` reads.
    func readOverheadUserDefaults() -> Measure.SideBySide {
        let suite = Scratch.path("read-suite")
        let defaults = UserDefaults(suiteName: suite)!
        defaults.set("hello", forKey: "s")
        defaults.set(42, forKey: "i")
        defaults.set(0.5, forKey: "d")
        let prefs = Preferences(store: UserDefaultsStore(defaults, domain: suite))
        let (s, i, d) = (
            Preferences.Key<String>("s", default: ""), Preferences.Key<Int>("i", default: 0),
            Preferences.Key<Double>("d", default: 0)
        )
        // Many short turns rather than a few long ones: a slow stretch of this shared machine
        // lasts seconds, and a turn of each within it weighs on both alike.
        let rounds = sizes.reads / 3 / Measure.turnsPerRepetition
        let turns = Measure.sideBySide(
            operations: rounds * 3, repetitions: sizes.repetitions * Measure.turnsPerRepetition
        ) {
            for _ in 0..<rounds {
                consume(defaults.string(forKey: "s"))
                consume(defaults.integer(forKey: "i"))
                consume(defaults.double(forKey: "d"))
            }
        } _: {
            for _ in 0..<rounds {
                consume(prefs[s])
                consume(prefs[i])
                consume(prefs[d])
            }
        }
        defaults.removePersistentDomain(forName: suite)
        return turns
    }

    /// Typed writes against plain `UserDefaults.set`, no synchronize on either side.
    func writeOverheadUserDefaults() -> Measure.SideBySide {
        let suite = Scratch.path("write-suite")
        let defaults = UserDefaults(suiteName: suite)!
        let prefs = Preferences(
            store: UserDefaultsStore(defaults, domain: suite, synchronizesEachWrite: false))
        let key = Preferences.Key<Int>("typed", default: 0)
        let n = sizes.writes / Measure.turnsPerRepetition
        let turns = Measure.sideBySide(
            operations: n, repetitions: sizes.repetitions * Measure.turnsPerRepetition
        ) {
            for index in 0..<n { defaults.set(index, forKey: "plain") }
        } _: {
            for index in 0..<n { prefs[key] = index }
        }
        defaults.removePersistentDomain(forName: suite)
        return turns
    }

    /// Nanoseconds per typed read from a `SQLiteStore` holding 1,000 keys: of an `Int` and of a
    /// short `String` (both from the store's read slots), of a long `String` (through the
    /// cache's lock), and of a key with nothing stored (its default, as most reads of a new
    /// install are).
    ///
    /// The `Int` and the short `String` are read by one generic loop, in turns (their ratio is a
    /// goal: measured apart, a slower stretch of the machine moved it by a tenth).
    func sqliteReadNanoseconds() throws -> (
        integerAndString: Measure.SideBySide, longString: Double, missing: Double
    ) {
        let store = try SQLiteStore(path: Scratch.path("read.sqlite"))
        try store.transaction { t in
            for index in 0..<1_000 { t["k\(index)"] = .integer(Int64(index)) }
            t["name"] = .string("a string longer than fifteen bytes")
            t["theme"] = .string("dark")
        }
        let prefs = Preferences(store: store)
        let reads = sizes.reads / Measure.turnsPerRepetition
        func loop<Value>(_ key: Preferences.Key<Value>) -> () -> Void {
            { for _ in 0..<reads { consume(prefs[key]) } }
        }
        let integerAndString = Measure.sideBySide(
            operations: reads, repetitions: sizes.repetitions * Measure.turnsPerRepetition,
            loop(Preferences.Key<Int>("k500", default: 0)),
            loop(Preferences.Key<String>("theme", default: "")))
        let name = loop(Preferences.Key<String>("name", default: ""))
        let long = Measure.nanosecondsPerOperation(operations: reads, repetitions: sizes.repetitions, name)
        let unset = loop(Preferences.Key<Int>("never.written", default: 7))
        let missing = Measure.nanosecondsPerOperation(
            operations: reads, repetitions: sizes.repetitions, unset)
        return (integerAndString, long, missing)
    }

    /// One write through `SQLiteStore` (safe against `kill -9`) against a raw C-API upsert, in
    /// turns.
    ///
    /// The raw upsert is committed alone. A turn of the store is enough writes that the journal
    /// is moved into SQLite several times during it; it is flushed after it (untimed), so that
    /// its last move does not slow the raw turn after it. Twenty rounds at full sizes, as for
    /// the write-growth pairs.
    func sqliteWriteAgainstRaw() throws -> Measure.SideBySide {
        let rawWrites = 2_000
        let raw = RawSQLite(path: Scratch.path("raw.sqlite"))
        let store = try SQLiteStore(path: Scratch.path("prefs.sqlite"))
        let prefs = Preferences(store: store)
        let keys = (0..<100).map { Preferences.Key<Int>("k\($0)", default: 0) }
        let writes = sizes.writes
        return try Measure.sideBySide(
            operations: rawWrites, secondOperations: writes, repetitions: sizes.repetitions * 4
        ) {
            for index in 0..<rawWrites { raw.write(key: "k\(index % 100)", value: Int64(index)) }
        } _: {
            for index in 0..<writes { try prefs.set(index, for: keys[index % 100]) }
        } settle: {
            try? store.flush()  // a failure here fails the next turn's writes, which report it
        }
    }

    /// Publishing 1,000 key descriptions to a SQLite store: the first time (every one written) and
    /// at a later launch (nothing changed: one read), in nanoseconds, beside a raw commit.
    func publishingDescriptions() throws -> (raw: Double, first: Double, again: Double) {
        let keys = (0..<1_000).map { index in
            Preferences.Key<Double>(
                "key.\(index)", default: 0.5, help: "Setting number \(index)", allowed: .range(0...1))
        }
        let raw = RawSQLite(path: Scratch.path("publish-raw.sqlite"))
        let rawTime = Measure.nanosecondsPerOperation(operations: 200, repetitions: sizes.repetitions) {
            for index in 0..<200 { raw.write(key: "k\(index % 100)", value: Int64(index)) }
        }
        var firsts: [Double] = []
        var agains: [Double] = []
        for repetition in 0..<sizes.repetitions {
            let prefs = Preferences(
                store: try SQLiteStore(path: Scratch.path("publish-\(repetition).sqlite")))
            firsts.append(
                try Measure.nanosecondsPerOperation(operations: 1, repetitions: 1) { try prefs.publish(keys) }
            )
            agains.append(
                try Measure.nanosecondsPerOperation(operations: 1, repetitions: 1) { try prefs.publish(keys) }
            )
        }
        return (rawTime, Measure.median(firsts), Measure.median(agains))
    }

    /// Nanoseconds per `SQLiteStore` write with `keys` keys stored, each write to another key
    /// (so checkpoints move as many distinct rows as there are writes, up to `keys`).
    ///
    /// Each repetition writes enough to fill the journal's checkpoint threshold several times, so
    /// every repetition pays for its share of checkpoints (fewer writes would leave some
    /// repetitions with a checkpoint and some without, and the median would pick either).
    func sqliteWrite(withKeysStored keys: Int) throws -> Double {
        try sqliteWriteAndCheckpoints(withKeysStored: keys).write
    }

    /// The same, with what the checkpoints of those writes cost: their CPU time (on the threads
    /// that ran them, in the background) divided by the records they moved into SQLite.
    func sqliteWriteAndCheckpoints(withKeysStored keys: Int) throws -> (
        write: Double, checkpointPerWrite: Double
    ) {
        let store = try SQLiteStore(path: Scratch.path("growth-\(keys).sqlite"))
        try store.transaction { t in for index in 0..<keys { t["k\(index)"] = .integer(Int64(index)) } }
        try store.flush()
        let writes = sizes.writes
        // The keys in the order they are written, made before timing: the benchmark's own look-up
        // of a key among 100,000 would otherwise be a cache miss counted as the store's.
        let names = (0..<writes).map { "k\(($0 * 7_919) % keys)" }
        // The moves run on the store's background thread (and in `flush()`, on this one): the
        // process's CPU time less this thread's during the writes is theirs, and the wake-ups'.
        let processBefore = ProcessCPU.now()
        var threadDuringWrites: UInt64 = 0
        let write = try Measure.nanosecondsPerOperation(operations: writes, repetitions: sizes.repetitions) {
            let start = ProcessCPU.thisThread()
            for index in 0..<writes {
                try store.setValue(.integer(Int64(index)), forKey: names[index])
            }
            threadDuringWrites += ProcessCPU.thisThread() - start
        }
        try store.flush()  // the last writes' move counted too
        let process = ProcessCPU.now() - processBefore
        let allWrites = Double(writes * (sizes.repetitions + 1))  // the warm-up run's too
        return (write, Double(process - min(process, threadDuringWrites)) / allWrites)
    }

    /// Nanoseconds per write with 100 keys stored and with `keys` keys stored, side by side.
    ///
    /// Turns of each store are taken alternately, each flushed after its turn (untimed), so that
    /// neither a slower stretch of the machine nor the other store's checkpoints weigh on one
    /// alone. A turn is as many writes as a repetition of ``sqliteWrite(withKeysStored:)``, so
    /// each moves its own records into SQLite several times, in the background.
    func sqliteWriteSideBySide(withKeysStored keys: Int) throws -> Measure.SideBySide {
        func prepared(_ keys: Int) throws -> (store: SQLiteStore, names: [String]) {
            let store = try SQLiteStore(path: Scratch.path("growth-pair-\(keys).sqlite"))
            try store.transaction { t in for index in 0..<keys { t["k\(index)"] = .integer(Int64(index)) } }
            try store.flush()
            return (store, (0..<sizes.writes).map { "k\(($0 * 7_919) % keys)" })
        }
        let hundred = try prepared(100)
        let many = try prepared(keys)
        func write(_ stored: (store: SQLiteStore, names: [String])) throws {
            for (index, name) in stored.names.enumerated() {
                try stored.store.setValue(.integer(Int64(index)), forKey: name)
            }
        }
        // Twenty rounds: from one round to the next the ratio moves by a third here (the
        // machine's speed changes within a tenth of a second, a turn's length), and the median of
        // six moved by a sixth from run to run. A round is about a second at 100,000 keys, most
        // of it the large store's flush.
        return try Measure.sideBySide(operations: sizes.writes, repetitions: sizes.repetitions * 4) {
            try write(hundred)
        } _: {
            try write(many)
        } settle: {
            // A failure here fails the next turn's writes, which report it.
            try? hundred.store.flush()
            try? many.store.flush()
        }
    }

    /// Nanoseconds per `UserDefaults` set + `synchronize()` with `keys` keys stored.
    func foundationWrite(withKeysStored keys: Int) -> Double {
        let suite = Scratch.path("growth-suite-\(keys)")
        // The domain's file is written directly: filling it through Foundation on Linux is
        // quadratic (each set scans a list of every key; 100,000 keys took over ten minutes).
        let domain = Dictionary(uniqueKeysWithValues: (0..<keys).map { ("k\($0)", $0 as Any) })
        if let file = try? PropertyListSerialization.data(fromPropertyList: domain, format: .xml, options: 0)
        {
            try? file.write(to: URL(fileURLWithPath: suite + ".plist"))
        }
        let defaults = UserDefaults(suiteName: suite)!
        if defaults.persistentDomain(forName: suite)?.count != keys {
            defaults.setPersistentDomain(domain, forName: suite)  // where the file lives elsewhere
        }
        defaults.synchronize()
        // Foundation rewrites the whole file per synchronize: fewer writes for large domains.
        let writes = keys >= 50_000 ? 5 : keys >= 5_000 ? 20 : 200
        let time = Measure.nanosecondsPerOperation(operations: writes, repetitions: sizes.repetitions) {
            for index in 0..<writes {
                defaults.set(index, forKey: "k\((index * 7_919) % keys)")
                defaults.synchronize()
            }
        }
        // No removePersistentDomain: on Linux it removes key by key, quadratically; the scratch
        // folder holding the file is deleted at the end of the run.
        return time
    }
}
