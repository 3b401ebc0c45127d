import CPrefsShared
import Dispatch
import Foundation

extension SQLiteStore {
    /// The SQLite connection (checkpoints, catching up from SQLite, moving in).
    struct Database {
        let connection: SQLiteConnection
        /// `PRAGMA data_version` when this connection last read the rows (a store without a
        /// journal polls it).
        var dataVersion: Int64
        /// The file the connection opened, to notice when the path names another one.
        let file: FileIdentity?
        /// Set when the store closed the connection; nothing runs on it after that.
        var isClosed = false
    }

    /// What reads answer from: every value, and how far into the journal it is.
    struct Cache {
        var values: [StoreKey: PropertyListValue]
        /// Every record up to this sequence number is applied.
        var position: Journal.Position
    }
}

/// A file's device and inode: what stays the same while a path keeps naming the same file.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the file at `path` now, or `nil` when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

/// Everything an ``SQLiteStore`` does with its files: writing to the journal, reading other
/// processes' records, checkpoints into SQLite, closing.
///
/// Background work (the watch, checkpoints) holds this object, never the store, so the store's
/// last release (and the file's closing) happens on the thread of its user.
///
/// Lock order: `writer`, then `database` (and SQLite's write lock), then the journal's lock, then
/// `cache`. Writes take `writer` and the journal's lock (and `database` before the journal's lock
/// when they must catch up from SQLite); checkpoints take `database`, SQLite's write lock and
/// the journal's lock; reads take `cache` (and `database` when catching up from SQLite).
final class SQLiteStoreCore: Sendable {
    let path: String
    let options: SQLiteStore.Options
    /// `nil` for a read-only store whose folder has no journal: it reads SQLite alone.
    let journal: Journal?
    /// One write at a time per store among this process's threads; holds when the file's
    /// identity was last checked.
    private let writer: TransactionLock<UInt64>
    private let database: Locked<SQLiteStore.Database>
    let cache: Locked<SQLiteStore.Cache>
    let observers = StoreObservers(label: "SQLite")
    /// The busy timeout in milliseconds, for the journal's lock.
    private let lockTimeout: Int64
    /// The file the store opened (not read from `database`, which a checkpoint holds for long).
    private let openedFile: FileIdentity?
    /// Set while a background checkpoint is queued or running.
    private let checkpointQueued = Locked(false)

    /// The journal's size at which a write queues a checkpoint in the background.
    static let checkpointThreshold = 1 << 20
    /// The size at which a write first moves the journal into SQLite itself.
    static let journalLimit = 64 << 20

    init(path: String, options: SQLiteStore.Options, opened: SQLiteStore.Opened) {
        self.path = path
        self.options = options
        lockTimeout = Int64(options.busyTimeout.wholeMilliseconds)
        openedFile = opened.database.file
        journal = opened.journal
        writer = TransactionLock(0, store: "SQLiteStore(\(path))", timeout: options.busyTimeout)
        database = Locked(opened.database)
        cache = Locked(opened.cache)
    }

    /// Moves the journal into SQLite, then closes the connection; called once, by the store's
    /// `deinit`.
    func close() {
        if let journal, journal.isWritable, journal.usedBytes > 0 {
            do { try checkpoint() } catch {
                // Nothing is lost: the records stay in the journal for the next store to move.
                journal.report("could not move the journal into SQLite while closing: \(error)")
            }
        }
        database.withLock { database in
            database.connection.close()
            database.isClosed = true
        }
    }

    // MARK: - Reading

    /// The value under `key`, current with every write made before this call: one lock and one
    /// load of the journal's sequence number when nothing changed.
    func value(for key: StoreKey) -> PropertyListValue? {
        let current: PropertyListValue?? = cache.withLock { cache in
            guard let journal, journal.sequence > cache.position.sequence else { return .some(cache.values[key]) }
            return .none
        }
        if let current { return current }
        return read { $0.values[key] }
    }

    /// Brings the cache up to date with every record written before this call.
    func catchUp() { read { _ in } }

    /// Runs `body` on the cache once it holds every record written before this call.
    func read<Result>(_ body: (inout SQLiteStore.Cache) -> Result) -> Result {
        while true {
            let result: Result? = cache.withLock { cache in
                guard let journal, journal.sequence > cache.position.sequence else { return body(&cache) }
                guard catchUpWithoutLock(&cache, journal) != .behind else { return nil }
                return body(&cache)
            }
            if let result { return result }
            // Behind what the journal still holds: the rest is in SQLite.
            do { try catchUpFromSQLite() } catch {
                journal?.report("cannot read the changes from SQLite: \(error)")
                return cache.withLock { body(&$0) }
            }
        }
    }

    /// How a catch-up from the journal ended.
    enum CatchUp {
        /// Every record written before it started is applied.
        case caughtUp
        /// The journal no longer holds every record after the cache's position: read SQLite.
        case behind
        /// The records up to a damaged one are applied; the damage is reported.
        case damaged
    }

    /// Applies the records after the cache's position, reading the journal without its lock.
    private func catchUpWithoutLock(_ cache: inout SQLiteStore.Cache, _ journal: Journal) -> CatchUp {
        for attempt in 0... {
            let generation = journal.generation
            if generation % 2 == 1 {
                // Records are being moved: a `memcpy` under the lock, over in microseconds.
                if attempt > 1000 { usleep(100) } else { sched_yield() }
                continue
            }
            let announced = journal.sequence
            let base = journal.baseSequence
            let end = journal.writeOffset
            guard cache.position.sequence >= base else { return .behind }
            let start = cache.position.generation == generation ? cache.position.offset : Journal.Layout.headerSize
            var scan = RecordScan(journal: journal, from: start, to: end, after: 0)
            var records: [JournalRecord] = []
            while let record = scan.next() {
                if record.sequence > cache.position.sequence { records.append(record) }
            }
            prefs_atomic_fence()
            guard journal.generation == generation else { continue }
            if let failure = scan.failure {
                // Stable bytes that are not a record: damage. The next holder of the lock cuts it.
                journal.report("\(failure); reading stops there")
                journal.checkOnNextLock()
            }
            apply(records, to: &cache)
            cache.position = Journal.Position(
                sequence: max(scan.lastSequence, cache.position.sequence, scan.failure == nil ? announced : 0),
                generation: generation, offset: scan.offset)
            return scan.failure == nil ? .caughtUp : .damaged
        }
        return .behind
    }

    /// Applies records to the cache and tells observers, one change per record (in order).
    private func apply(_ records: [JournalRecord], to cache: inout SQLiteStore.Cache) {
        var undecodable: Set<String> = []
        for record in records {
            var change: [StoreKey: PropertyListValue?] = [:]
            for entry in record.entries {
                guard let encoded = entry.encodedValue else {
                    change[entry.key] = .some(nil)
                    continue
                }
                if let value = try? PropertyListValue(binaryEncoded: encoded) {
                    change[entry.key] = .some(value)
                } else {
                    undecodable.insert(entry.key.name)
                }
            }
            for (key, value) in change { cache.values[key] = value }
            observers.publish(StoreChange(values: change))
        }
        if !undecodable.isEmpty {
            FileHandle.standardError.write(
                Data("prefs: \(path): cannot decode the new values of \(undecodable.sorted()); ignoring them\n".utf8))
        }
    }

    /// Reads what changed from SQLite (the rows changed since the cache's position, up to the
    /// last checkpoint), then the journal's records after that.
    func catchUpFromSQLite() throws {
        try withDatabase(during: "catching up") { database in
            let connection = database.connection
            let known = cache.withLock { $0.position.sequence }
            // Read before SQLite: records up to it were committed to SQLite before it was set.
            let base = journal?.baseSequence ?? 0
            var changed: [StoreKey: PropertyListValue?] = [:]
            var undecodable: [String] = []
            var highest = known
            try perform {
                try connection.execute("BEGIN")
                defer { try? connection.execute("COMMIT") }
                database.dataVersion = try connection.integer("PRAGMA data_version") ?? 0
                highest = max(highest, try Self.checkpointedSequence(connection))
                try connection.run(
                    "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1", [.integer(Int64(bitPattern: known))]
                ) { row in
                    let key = StoreKey(row.text(0))
                    highest = max(highest, UInt64(bitPattern: row.integer(2)))
                    if row.isNull(1) {
                        changed[key] = .some(nil)
                    } else if let value = try? PropertyListValue(binaryEncoded: row.blob(1)) {
                        changed[key] = .some(value)
                    } else {
                        undecodable.append(key.name)
                    }
                }
            }
            if !undecodable.isEmpty {
                FileHandle.standardError.write(
                    Data("prefs: \(path): cannot decode the new values of \(undecodable.sorted()); ignoring them\n".utf8))
            }
            if highest < base {
                // SQLite lacks records the journal dropped: a power loss undid the checkpoint's
                // commit (or the journal belongs to another copy of the database).
                journal?.report(
                    "the records after \(highest) up to \(base) are in neither the journal nor SQLite; continuing from \(base)")
                highest = base
            }
            cache.withLock { cache in
                // Only when nobody moved the cache meanwhile (then this read is not the newest).
                guard cache.position.sequence == known else { return }
                for (key, value) in changed { cache.values[key] = value }
                cache.position = Journal.Position(sequence: highest, generation: .max, offset: Journal.Layout.headerSize)
                observers.publish(StoreChange(values: changed))
            }
        }
    }

    /// The sequence number up to which SQLite holds every record (0 for a file without one).
    static func checkpointedSequence(_ connection: SQLiteConnection) throws -> UInt64 {
        let stored = try connection.integer(
            "SELECT value FROM prefs_meta WHERE name = 'checkpointed_sequence'")
        return UInt64(bitPattern: stored ?? 0)
    }

    /// Called by the watch: reads what other stores wrote. Returns whether there was anything new.
    func lookForChanges() -> Bool {
        guard let journal else {
            // No journal: SQLite's `data_version` says whether another connection committed.
            let moved = (try? withDatabase(during: "a refresh") { database in
                try perform { try database.connection.integer("PRAGMA data_version") } != database.dataVersion
            }) ?? false
            if moved { try? catchUpFromSQLite() }
            return moved
        }
        let before = cache.withLock { $0.position.sequence }
        guard journal.sequence > before else { return false }
        return read { $0.position.sequence } > before
    }

    // MARK: - Writing

    /// One write: `body` runs on the cache (current with every process's writes) holding the
    /// journal's lock, and its writes are appended as one record.
    func write<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try commit {
            var transaction = StoreTransaction(
                read: { key in self.cache.withLock { $0.values[StoreKey(key)] } },
                keys: { self.cache.withLock { $0.values.keys.map(\.name) } })
            let result = try body(&transaction)
            return (.many(transaction.writes), result)
        }
    }

    /// Stores or removes one value: a write without a transaction to run.
    func set(_ value: PropertyListValue?, for key: StoreKey) throws {
        try commit { (.one(key, value), ()) }
    }

    /// What one write changes: one key (no dictionary to build), or a transaction's writes.
    enum Writes {
        case one(StoreKey, PropertyListValue?)
        case many([StoreKey: PropertyListValue?])

        var count: Int {
            switch self {
            case .one: 1
            case .many(let writes): writes.count
            }
        }

        func forEach(_ body: (StoreKey, PropertyListValue?) throws -> Void) rethrows {
            switch self {
            case .one(let key, let value): try body(key, value)
            case .many(let writes): for (key, value) in writes { try body(key, value) }
            }
        }

        var dictionary: [StoreKey: PropertyListValue?] {
            switch self {
            case .one(let key, let value): [key: value]
            case .many(let writes): writes
            }
        }

        func encoded(sequence: UInt64) -> [UInt8] {
            switch self {
            case .one(let key, let value):
                JournalRecord.encode(CollectionOfOne((key: key, value: value)), count: 1, sequence: sequence)
            case .many(let writes): JournalRecord.encode(writes, sequence: sequence)
            }
        }
    }

    /// Runs `produce` holding the journal's lock on a current cache, and appends the writes it
    /// returns as one record.
    private func commit<Result>(
        _ produce: () throws -> (writes: Writes, result: Result)
    ) throws -> Result {
        guard let journal, journal.isWritable else {
            throw SQLiteStoreError(path: path, kind: .readOnly, detail: "the store was opened read-only")
        }
        if journal.usedBytes > Self.journalLimit { try checkpoint() }
        return try withWriter { lastFileCheck in
            try checkFileIsTheOneOpened(lastCheck: &lastFileCheck)
            var isFirstAttempt = true
            while true {
                if !isFirstAttempt {
                    // The cache is behind what the journal holds: catch up from SQLite, outside
                    // the journal's lock (the connection comes before it).
                    catchUp()
                }
                isFirstAttempt = false
                let outcome = try journal.withLock(timeoutMilliseconds: lockTimeout) { locked in
                    try commitHoldingLock(journal, locked, produce)
                }
                if let (result, wake) = outcome {
                    if wake { journal.wakeWatchers() }
                    if options.durability == .powerSafe { try journal.sync() }
                    if journal.usedBytes > Self.checkpointThreshold { queueCheckpoint() }
                    return result
                }
            }
        }
    }

    /// Runs `body` as this process's only writer to the store, waiting at most the busy timeout.
    private func withWriter<Result>(_ body: (inout UInt64) throws -> Result) throws -> Result {
        do {
            return try writer.withLock(during: "a write", body)
        } catch let timeout as TransactionTimeoutError {
            throw SQLiteStoreError(path: path, kind: .busy, detail: timeout.description)
        }
    }

    /// The write itself; `nil` when the cache fell behind what the journal holds (a checkpoint
    /// ran meanwhile), to catch up from SQLite and try again.
    private func commitHoldingLock<Result>(
        _ journal: Journal, _ locked: Journal.Locked,
        _ produce: () throws -> (writes: Writes, result: Result)
    ) throws -> (Result, wake: Bool)? {
        var outcome = cache.withLock { cache in
            cache.position.sequence >= journal.sequence ? .caughtUp : catchUpWithoutLock(&cache, journal)
        }
        if outcome == .damaged {
            // Cut now: a record appended after the damage would be out of every reader's reach.
            journal.repair(reason: nil, locked: locked)
            outcome = cache.withLock { catchUpWithoutLock(&$0, journal) }
        }
        guard outcome != .behind else { return nil }
        let (writes, result) = try produce()
        guard writes.count > 0 else { return (result, false) }
        try writes.forEach { _, value in try value?.checkNesting() }
        let sequence = journal.sequence + 1
        let record = writes.encoded(sequence: sequence)
        try cache.withLock { cache in
            // Appended holding the cache: a look at the journal from this process never finds
            // this record before the cache has it (it would apply and announce it twice).
            let end = try journal.append(record, locked: locked)
            writes.forEach { key, value in cache.values[key] = value }
            cache.position = Journal.Position(sequence: sequence, generation: journal.generation, offset: end)
            // Published holding the journal's lock: observers hear in the order of the records.
            if observers.count > 0 { observers.publish(StoreChange(values: writes.dictionary)) }
        }
        return (result, journal.announce(locked: locked))
    }

    /// A monotonic clock that is cheap to read: on Linux the coarse one (a few milliseconds'
    /// resolution, a third of the cost).
    private static func coarseNanoseconds() -> UInt64 {
        #if os(Linux)
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
            return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        #else
            return DispatchTime.now().uptimeNanoseconds
        #endif
    }

    /// Throws ``SQLiteStoreError/Kind/replaced`` when the path no longer names the opened file.
    ///
    /// Deleted, or another file moved over it: a write would report success for data nobody
    /// reads. The `stat` it takes costs about as much as the rest of a write, so it is made at
    /// most once a millisecond (a few on Linux, whose cheap clock ticks that coarsely): a write
    /// made within that time of the file's deletion can still succeed; any later one throws.
    private func checkFileIsTheOneOpened(lastCheck: inout UInt64) throws {
        let now = Self.coarseNanoseconds()
        guard now &- lastCheck >= 1_000_000 else { return }
        guard let opened = openedFile else { return }
        let found = FileIdentity(path: path)
        guard found != opened else {
            lastCheck = now
            return
        }
        throw SQLiteStoreError(
            path: path, kind: .replaced,
            detail: found == nil ? "no file is at the path any more" : "another file is at the path now")
    }

    // MARK: - Checkpoints: moving the journal into SQLite

    /// Queues a checkpoint in the background (one at a time per store).
    private func queueCheckpoint() {
        let queued = checkpointQueued.withLock { queued in
            defer { queued = true }
            return queued
        }
        guard !queued else { return }
        DispatchQueue.global(qos: .utility).async { [weak self] in
            guard let self else { return }
            defer { checkpointQueued.withLock { $0 = false } }
            do { try checkpoint() } catch let error as SQLiteStoreError where error.detail == "the store is closed" {
                return
            } catch {
                // Nothing is lost (the records stay in the journal); the next write tries again.
                journal?.report("moving the journal into SQLite failed, will try again: \(error)")
            }
        }
    }

    /// A key's last value in the records a checkpoint moves.
    private struct LatestValue {
        let bytes: RecordScan.ValueBytes?
        let sequence: UInt64
    }

    /// Moves every record in the journal into SQLite in one transaction (synced), then drops
    /// them from the journal.
    ///
    /// A process killed before the commit leaves the records in the journal; one killed after it
    /// leaves them in both, and `checkpointed_sequence` says which are already in SQLite.
    func checkpoint() throws {
        guard let journal, journal.isWritable else { return }
        try withDatabase(during: "a checkpoint") { database in
            let connection = database.connection
            try perform {
                try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                    try connection.run("BEGIN IMMEDIATE")
                }
            }
            let moved: UInt64
            let snapshot: (end: Int, generation: UInt64)
            do {
                let checkpointed = try perform { try Self.checkpointedSequence(connection) }
                // What an earlier checkpoint committed but did not drop is dropped first; from
                // here on nobody else moves records (that takes SQLite's write lock, held here).
                // Found without the lock (held here, SQLite's write lock keeps records where
                // they are), so writers never wait for a walk through the journal.
                let earlier = (journal.generation, journal.writeOffset)
                let leftover = journal.start(after: checkpointed, upTo: earlier.1)
                snapshot = try journal.withLock(timeout: options.busyTimeout) { locked in
                    journal.drop(through: checkpointed, knownStart: (leftover, earlier.0), locked: locked)
                    return (journal.writeOffset, journal.generation)
                }
                let (end, generation) = snapshot
                var scan = RecordScan(journal: journal, from: Journal.Layout.headerSize, to: end, after: 0)
                // Read in place (nobody moves records while SQLite's write lock is held), keeping
                // each key's last value: where the bytes are, not a copy of them.
                var latest: [StoreKey: LatestValue] = [:]
                while scan.nextInPlace(skipping: checkpointed, { sequence, key, value in
                    if sequence > checkpointed { latest[key] = LatestValue(bytes: value, sequence: sequence) }
                }) != nil {}
                guard journal.generation == generation, scan.failure == nil else {
                    journal.checkOnNextLock()
                    throw SQLiteStoreError(
                        path: path, kind: .corrupt,
                        detail: "the journal changed while being moved into SQLite: \(scan.failure ?? "moved")")
                }
                moved = scan.lastSequence
                if moved > checkpointed {
                    try perform {
                        for (key, entry) in latest {
                            try connection.run(
                                """
                                INSERT INTO prefs_entries(key, value, seq) VALUES (?1, ?2, ?3)
                                ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq
                                """,
                                [
                                    .text(key.name),
                                    entry.bytes.map {
                                        .blob(Data(journal.bytesInPlace(at: $0.offset, count: $0.count)))
                                    } ?? .null,
                                    .integer(Int64(bitPattern: entry.sequence)),
                                ])
                        }
                        try connection.run(
                            """
                            INSERT INTO prefs_meta(name, value) VALUES ('checkpointed_sequence', ?1)
                            ON CONFLICT(name) DO UPDATE SET value = excluded.value
                            """, [.integer(Int64(bitPattern: moved))])
                    }
                }
                try perform { try connection.run("COMMIT") }
            } catch {
                try? connection.run("ROLLBACK")
                throw error
            }
            // Every record up to `end` is now in SQLite: the rest starts there (unless a repair
            // moved records meanwhile, which `drop` sees by the generation).
            try journal.withLock(timeout: options.busyTimeout) { locked in
                journal.drop(through: moved, knownStart: (snapshot.end, snapshot.generation), locked: locked)
            }
        }
    }

    // MARK: - The connection

    /// Runs `body` holding the connection.
    func withDatabase<Result>(during operation: String, _ body: (inout SQLiteStore.Database) throws -> Result)
        throws -> Result
    {
        try database.withLock { database in
            guard !database.isClosed else {
                throw SQLiteStoreError(path: path, kind: .other, detail: "the store is closed")
            }
            return try body(&database)
        }
    }

    /// Runs a SQLite call, turning its failure into an ``SQLiteStoreError`` naming this file.
    func perform<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let failure as SQLiteConnection.Failure {
            throw SQLiteStoreError(path: path, failure)
        }
    }

    /// Commits everything written so far into SQLite and syncs it.
    ///
    /// Inside a transaction on this thread it cannot (the transaction holds the journal): it
    /// syncs the journal instead, which makes every earlier write as durable.
    func flush() throws {
        guard let journal, journal.isWritable else { return }
        if writer.isHeldByCurrentThread {
            try journal.sync()
        } else {
            try checkpoint()
        }
    }
}
