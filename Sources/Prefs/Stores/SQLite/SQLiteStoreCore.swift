import Dispatch
import Foundation

extension SQLiteStore {
    /// The connection, and what it has seen of the file.
    struct Database {
        let connection: SQLiteConnection
        /// The highest change sequence number this process has applied to its cache.
        var lastSequence: Int64
        /// `PRAGMA data_version` when the cache was last refreshed.
        var dataVersion: Int64
        /// The file the connection opened, to notice when the path names another one.
        let file: FileIdentity?
        /// Set when the store closed the connection; nothing runs on it after that.
        var isClosed = false
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

/// Everything an ``SQLiteStore`` does with its file: writing, catching up with other processes,
/// deferred commits, closing.
///
/// Background work (the refresh timer, deferred commits) holds this object, never the store, so
/// the store's last release (and the file's closing) happens on the thread of its user.
///
/// Lock order: `database`, then `pending`, then `values`.
final class SQLiteStoreCore: Sendable {
    let path: String
    let options: SQLiteStore.Options
    /// Held by every write and by catching up: one SQLite transaction at a time per store.
    private let database: TransactionLock<SQLiteStore.Database>
    /// Every stored value: what reads answer from.
    let values: Locked<[StoreKey: PropertyListValue]>
    /// Deferred mode: writes acknowledged but not yet committed, and whether a flush is scheduled.
    let pending = Locked<(writes: [StoreKey: PropertyListValue?], flushScheduled: Bool)>(([:], false))
    let observers = StoreObservers(label: "SQLite")
    /// Tells the other stores on the file about each commit.
    let signal: ChangeSignal

    init(path: String, options: SQLiteStore.Options, opened: SQLiteStore.Opened) {
        self.path = path
        self.options = options
        signal = ChangeSignal(databasePath: path, file: opened.database.file)
        database = TransactionLock(
            opened.database, store: "SQLiteStore(\(path))", timeout: options.busyTimeout)
        values = Locked(opened.values)
    }

    /// Runs `body` holding the database; another thread's transaction is waited for at most the
    /// busy timeout, like another process's.
    func withDatabase<Result>(during operation: String, _ body: (inout SQLiteStore.Database) throws -> Result)
        throws -> Result
    {
        do {
            return try database.withLock(during: operation) { database in
                guard !database.isClosed else {
                    throw SQLiteStoreError(path: path, kind: .other, detail: "the store is closed")
                }
                return try body(&database)
            }
        } catch let timeout as TransactionTimeoutError {
            throw SQLiteStoreError(path: path, kind: .busy, detail: timeout.description)
        }
    }

    /// Commits deferred writes, then closes the connection; called once, by the store's `deinit`.
    func close() {
        do {
            try flush()
        } catch {
            FileHandle.standardError.write(
                Data("prefs: closing \(path): deferred writes lost: \(error)\n".utf8))
        }
        try? withDatabase(during: "closing") { database in
            database.connection.close()
            database.isClosed = true
        }
    }

    // MARK: - Writing

    /// One write transaction: catch up with other processes, run `body`, commit its writes
    /// (together with any deferred writes), then update the cache and tell observers.
    ///
    /// `body` reads the cache, which is exactly the file's state here: the write lock is held and
    /// the catch-up is done. It reads key by key rather than from a copy, because a copy of a
    /// large cache that is then modified would cost a full copy per write.
    func write<Result>(
        _ database: inout SQLiteStore.Database, _ body: (inout StoreTransaction) throws -> Result
    )
        throws -> Result
    {
        let connection = database.connection
        try perform {
            try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                try connection.run("BEGIN IMMEDIATE")
            }
        }
        var deferred: [StoreKey: PropertyListValue?] = [:]
        do {
            try checkFileIsTheOneOpened(database)
            deferred = pending.withLock { pending in
                defer { pending.writes = [:] }
                return pending.writes
            }
            try catchUp(&database, keeping: Set(deferred.keys))
            var transaction = StoreTransaction(reading: values)
            let result = try body(&transaction)
            let writes = transaction.writes
            try PropertyListValue.checkNesting(of: writes)
            let sequence = database.lastSequence + 1
            try store(deferred.merging(writes) { _, new in new }, sequence: sequence, on: connection)
            try perform { try connection.run("COMMIT") }
            signal.post()
            database.lastSequence = sequence
            values.withLock { values in
                for (key, value) in writes { values[key] = value }
            }
            // Published while the database lock is held, so observers hear in commit order.
            observers.publish(StoreChange(values: writes))
            return result
        } catch {
            try? connection.run("ROLLBACK")
            restorePending(deferred)
            throw error
        }
    }

    /// Throws ``SQLiteStoreError/Kind/replaced`` when the path no longer names the opened file.
    ///
    /// Deleted, or another file moved over it: a write would report success for data nobody
    /// reads. A `stat` call: well under a microsecond.
    private func checkFileIsTheOneOpened(_ database: SQLiteStore.Database) throws {
        guard let opened = database.file else { return }
        let now = FileIdentity(path: path)
        guard now != opened else { return }
        throw SQLiteStoreError(
            path: path, kind: .replaced,
            detail: now == nil ? "no file is at the path any more" : "another file is at the path now")
    }

    /// Upserts each value (a removal is a row whose value is NULL, so other processes can see it).
    private func store(
        _ writes: [StoreKey: PropertyListValue?], sequence: Int64, on connection: SQLiteConnection
    ) throws {
        for (key, value) in writes {
            try perform {
                try connection.run(
                    """
                    INSERT INTO prefs_entries(key, value, seq) VALUES (?1, ?2, ?3)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq
                    """,
                    [.text(key.name), value.map { .blob($0.binaryEncoded()) } ?? .null, .integer(sequence)])
            }
        }
    }

    // MARK: - Seeing other processes' writes

    /// Reads the rows other processes changed since this process last looked, applies them to the
    /// cache (except keys with a deferred write of ours, which will win), and tells observers.
    func catchUp(_ database: inout SQLiteStore.Database, keeping ownKeys: Set<StoreKey> = []) throws {
        let connection = database.connection
        // `data_version` changes only when another connection commits: when it has not, there is
        // nothing to read, and a write costs no extra query.
        let version = try perform { try connection.integer("PRAGMA data_version") } ?? 0
        guard version != database.dataVersion else { return }
        var changed: [StoreKey: PropertyListValue?] = [:]
        var undecodable: [String] = []
        var highest = database.lastSequence
        try perform {
            try connection.run(
                "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1 ORDER BY seq",
                [.integer(database.lastSequence)]
            ) { row in
                let key = StoreKey(row.text(0))
                highest = max(highest, row.integer(2))
                if row.isNull(1) {
                    changed[key] = .some(nil)
                } else if let value = try? PropertyListValue(binaryEncoded: row.blob(1)) {
                    changed[key] = .some(value)
                } else {
                    // Not a removal: a value this release cannot read. The cache keeps what it had.
                    undecodable.append(key.name)
                }
            }
        }
        if !undecodable.isEmpty {
            FileHandle.standardError.write(
                Data(
                    "prefs: \(path): cannot decode the new values of \(undecodable.sorted()); ignoring them\n"
                        .utf8))
        }
        database.lastSequence = highest
        database.dataVersion = version
        let pendingKeys = pending.withLock { Set($0.writes.keys) }.union(ownKeys)
        changed = changed.filter { !pendingKeys.contains($0.key) }
        guard !changed.isEmpty else { return }
        values.withLock { values in
            for (key, value) in changed { values[key] = value }
        }
        observers.publish(StoreChange(values: changed))
    }

    /// Checks whether another connection committed, and catches up only then.
    ///
    /// Called by the refresh timer; `PRAGMA data_version` costs about a microsecond.
    func refreshFromOtherProcesses() {
        _ = try? withDatabase(during: "a refresh") { database in try catchUp(&database) }
    }

    /// Runs a SQLite call, turning its failure into an ``SQLiteStoreError`` naming this file.
    func perform<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let failure as SQLiteConnection.Failure {
            throw SQLiteStoreError(path: path, failure)
        }
    }

    // MARK: - The deferred mode: writes acknowledged from memory, committed in batches

    /// Commits every deferred write now.
    func flush() throws {
        guard pending.withLock({ !$0.writes.isEmpty }) else { return }
        try withDatabase(during: "flush()") { database in
            guard pending.withLock({ !$0.writes.isEmpty }) else { return }
            // An empty write of its own: `write` commits the queued writes with it.
            try write(&database) { _ in }
        }
    }

    /// Queues writes: visible at once in the cache and to observers, committed within `maxDelay`.
    func enqueueDeferred(_ writes: [StoreKey: PropertyListValue?], maxDelay: Duration) throws {
        if database.isHeldByCurrentThread {
            // The same misuse as a nested transaction, reported the same way.
            try withDatabase(during: "a write") { _ in }
        }
        let needsSchedule = pending.withLock { pending in
            for (key, value) in writes { pending.writes[key] = .some(value) }
            values.withLock { values in
                for (key, value) in writes { values[key] = value }
            }
            // Published under the lock, so observers hear in the order writes were made.
            observers.publish(StoreChange(values: writes))
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if needsSchedule { scheduleFlush(after: maxDelay) }
    }

    /// Puts writes taken for a commit that failed back in the queue, unless newer ones came since.
    private func restorePending(_ writes: [StoreKey: PropertyListValue?]) {
        guard !writes.isEmpty, case .deferred(let maxDelay) = options.durability else { return }
        let needsSchedule = pending.withLock { pending in
            for (key, value) in writes where pending.writes[key] == nil { pending.writes[key] = .some(value) }
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if needsSchedule { scheduleFlush(after: maxDelay) }
    }

    private func scheduleFlush(after delay: Duration) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay.timeInterval) { [weak self] in
            guard let self else { return }
            pending.withLock { $0.flushScheduled = false }
            do {
                try flush()
            } catch let error as SQLiteStoreError where error.detail == "the store is closed" {
                return
            } catch {
                // Nobody is waiting for this write to throw: say so once per failure, and retry.
                FileHandle.standardError.write(
                    Data("prefs: deferred commit failed, will retry: \(error)\n".utf8))
            }
        }
    }
}
