import Dispatch
import Foundation

/// A store in a SQLite file: durable, safe for several processes at once, crash-safe; the
/// default store on Linux.
///
/// ```swift
/// let prefs = Preferences(store: try SQLiteStore(path: "/var/lib/app/prefs.sqlite"))
/// prefs[.volume] = 0.8   // committed before this line returns
/// ```
///
/// **Durability.** See ``Durability``: by default every write is committed before it returns and
/// survives `kill -9` at any instant; `.powerSafe` also survives power loss; `.deferred` batches
/// commits in the background and can lose the last moments of writes.
///
/// **Consistency.** Reads come from an in-process cache of the whole store. It is current after
/// this process's own writes, and it is refreshed when another process commits: the store checks
/// `PRAGMA data_version` every ``Options/refreshInterval`` (10 ms by default) and at the start of
/// every write, and reads only the rows that changed. So a read may be up to one refresh interval
/// behind another process, never behind this one. `update` reads and writes inside one
/// `BEGIN IMMEDIATE` transaction, so it is atomic across processes.
///
/// **Observation.** Changes from this process and, within a refresh interval, from other
/// processes on the same file reach ``observe(_:)`` and everything built on it.
///
/// **Failures.** A corrupt file, or one that is not SQLite, throws ``SQLiteStoreError`` at
/// opening, unless ``Options/recreateOnCorruption`` is set. A full disk or read-only file throws
/// from the write, and what was stored stays as it was.
public final class SQLiteStore: PreferenceStore {
    /// The database file.
    public let path: String
    /// The options the store was opened with.
    public let options: Options
    /// Set when the file was corrupt and ``Options/recreateOnCorruption`` replaced it.
    public let recovery: CorruptionRecovery?

    /// The connection, and what it has seen of the file.
    ///
    /// Lock order: `database`, then `pending`, then `values`.
    struct Database {
        let connection: SQLiteConnection
        /// The highest change sequence number this process has applied to its cache.
        var lastSequence: Int64
        /// `PRAGMA data_version` when the cache was last refreshed.
        var dataVersion: Int64
    }

    let database: Locked<Database>
    /// Every stored value: what reads answer from.
    let values: Locked<[String: PropertyListValue]>
    /// Deferred mode: writes acknowledged but not yet committed, and whether a flush is scheduled.
    let pending = Locked<(writes: [String: PropertyListValue?], flushScheduled: Bool)>(([:], false))
    let observers: StoreObservers
    // `nonisolated(unsafe)`: Dispatch sources are thread-safe, but not marked `Sendable`.
    private nonisolated(unsafe) let refreshTimer: DispatchSourceTimer

    /// Opens (creating when needed, with its folders) the store at `path`.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: "\(NSHomeDirectory())/.config/app/prefs.sqlite")
    /// ```
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        let opened = try Self.open(path: path, options: options)
        database = Locked(opened.database)
        values = Locked(opened.values)
        recovery = opened.recovery
        observers = StoreObservers(label: "SQLite")
        refreshTimer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "prefs.sqlite.refresh"))
        refreshTimer.schedule(
            deadline: .now() + options.refreshInterval.timeInterval,
            repeating: options.refreshInterval.timeInterval)
        refreshTimer.setEventHandler { [weak self] in self?.refreshFromOtherProcesses() }
        refreshTimer.resume()
        if let recovery { FileHandle.standardError.write(Data("prefs: \(recovery)\n".utf8)) }
    }

    deinit {
        refreshTimer.cancel()
        try? flush()
    }

    /// `SQLiteStore(PATH)`.
    public var description: String { "SQLiteStore(\(path))" }

    /// The number of live observations of this store.
    public var observerCount: Int { observers.count }

    /// The stored value from the cache.
    public func value(forKey key: String) -> PropertyListValue? {
        values.withLock { $0[key] }
    }

    /// Every stored key and value, from the cache.
    public func snapshot() -> [String: PropertyListValue] {
        values.withLock { $0 }
    }

    /// Every stored key, from the cache.
    public func keys() -> [String] {
        values.withLock { Array($0.keys) }
    }

    /// Stores or removes one value: committed before returning, or queued in deferred mode.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        if case .deferred(let maxDelay) = options.durability {
            try value?.checkNesting()
            enqueueDeferred([key: value], maxDelay: maxDelay)
        } else {
            try transaction { $0[key] = value }
        }
    }

    /// Runs `body` inside one `BEGIN IMMEDIATE` transaction: atomic across processes.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try database.withLock { database in try write(&database, body) }
    }

    /// Calls `handler` with every change, from this process or another one, until the
    /// observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observers.add(handler)
    }

    // MARK: - Writing

    /// One write transaction: catch up with other processes, run `body`, commit its writes
    /// (together with any deferred writes), then update the cache and tell observers.
    ///
    /// `body` reads the cache, which is exactly the file's state here: the write lock is held and
    /// the catch-up is done. It reads key by key rather than from a copy, because a copy of a
    /// large cache that is then modified would cost a full copy per write.
    func write<Result>(_ database: inout Database, _ body: (inout StoreTransaction) throws -> Result) throws
        -> Result
    {
        let connection = database.connection
        try perform {
            try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                try connection.run("BEGIN IMMEDIATE")
            }
        }
        var deferred: [String: PropertyListValue?] = [:]
        do {
            deferred = pending.withLock { pending in
                defer { pending.writes = [:] }
                return pending.writes
            }
            try catchUp(&database, keeping: Set(deferred.keys))
            var transaction = StoreTransaction(
                read: { [values] key in values.withLock { $0[key] } },
                keys: { [values] in values.withLock { Array($0.keys) } })
            let result = try body(&transaction)
            let writes = transaction.writes
            try PropertyListValue.checkNesting(of: writes)
            let sequence = database.lastSequence + 1
            try store(deferred.merging(writes) { _, new in new }, sequence: sequence, on: connection)
            try perform { try connection.run("COMMIT") }
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

    /// Upserts each value (a removal is a row whose value is NULL, so other processes can see it).
    private func store(
        _ writes: [String: PropertyListValue?], sequence: Int64, on connection: SQLiteConnection
    ) throws {
        for (key, value) in writes {
            try perform {
                try connection.run(
                    """
                    INSERT INTO prefs_entries(key, value, seq) VALUES (?1, ?2, ?3)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq
                    """,
                    [.text(key), value.map { .blob($0.binaryEncoded()) } ?? .null, .integer(sequence)])
            }
        }
    }

    // MARK: - Seeing other processes' writes

    /// Reads the rows other processes changed since this process last looked, applies them to the
    /// cache (except keys with a deferred write of ours, which will win), and tells observers.
    func catchUp(_ database: inout Database, keeping ownKeys: Set<String> = []) throws {
        let connection = database.connection
        // `data_version` changes only when another connection commits: when it has not, there is
        // nothing to read, and a write costs no extra query.
        let version = try perform { try connection.integer("PRAGMA data_version") } ?? 0
        guard version != database.dataVersion else { return }
        var changed: [String: PropertyListValue?] = [:]
        var undecodable: [String] = []
        var highest = database.lastSequence
        try perform {
            try connection.run(
                "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1 ORDER BY seq",
                [.integer(database.lastSequence)]
            ) { row in
                let key = row.text(0)
                highest = max(highest, row.integer(2))
                if row.isNull(1) {
                    changed[key] = .some(nil)
                } else if let value = try? PropertyListValue(binaryEncoded: row.blob(1)) {
                    changed[key] = .some(value)
                } else {
                    // Not a removal: a value this release cannot read. The cache keeps what it had.
                    undecodable.append(key)
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
    private func refreshFromOtherProcesses() {
        database.withLock { database in _ = try? catchUp(&database) }
    }

    /// Runs a SQLite call, turning its failure into an ``SQLiteStoreError`` naming this file.
    func perform<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let failure as SQLiteConnection.Failure {
            throw SQLiteStoreError(path: path, failure)
        }
    }
}

extension Duration {
    /// The duration in seconds, for Dispatch.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (fractions kept down to a millisecond), for SQLite.
    var wholeMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? 0 : .max }
        return Int32(clamping: max(0, milliseconds + attoseconds / 1_000_000_000_000_000))
    }
}
