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
/// this process's own writes, and it is refreshed when another process commits: every commit
/// signals every store on the file (a futex on a shared counter on Linux, notify(3) on Apple
/// platforms, see ``ChangeSignal``), which then reads only the rows that changed; every write
/// also catches up first. Nothing runs while nobody writes but a safety-net check every
/// ``Options/refreshInterval``. So a read is behind another process's commit only for the moment
/// the signal takes (well under a millisecond on Linux), never behind this process. `update` reads
/// and writes inside one `BEGIN IMMEDIATE` transaction, so it is atomic across processes.
///
/// **Observation.** Changes from this process and from other processes on the same file reach
/// ``observe(_:)`` and everything built on it.
///
/// **Failures.** A corrupt file, or one that is not SQLite, throws ``SQLiteStoreError`` at
/// opening, unless ``Options/recreateOnCorruption`` is set. A full disk or read-only file throws
/// from the write, and what was stored stays as it was. When the file is deleted or another file
/// is moved over its path, writes throw ``SQLiteStoreError/Kind/replaced`` rather than report
/// success for data nobody would read.
///
/// **Closing.** The file is closed when the last reference to the store goes away, on the thread
/// that lets go of it (after committing deferred writes): background work never holds the store.
public final class SQLiteStore: PreferenceStore {
    /// The database file.
    public let path: String
    /// The options the store was opened with.
    public let options: Options
    /// Set when the file was corrupt and ``Options/recreateOnCorruption`` replaced it.
    public let recovery: CorruptionRecovery?

    /// The connection, the cache and the write path; shared with the background refresh and
    /// deferred commits, which hold it (never this object) so that closing stays here.
    let core: SQLiteStoreCore
    /// Wakes the store when another connection commits (see ``ChangeSignal``); holds the core
    /// weakly.
    private let watch: ChangeSignal.Watch

    /// Opens (creating when needed, with its folders) the store at `path`.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: "\(NSHomeDirectory())/.config/app/prefs.sqlite")
    /// ```
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        let opened = try Self.open(path: path, options: options)
        recovery = opened.recovery
        let core = SQLiteStoreCore(path: path, options: options, opened: opened)
        self.core = core
        watch = core.signal.watch(interval: options.refreshInterval) { [weak core] in
            core?.refreshFromOtherProcesses()
        }
        if let recovery { FileHandle.standardError.write(Data("prefs: \(recovery)\n".utf8)) }
    }

    deinit {
        watch.stop()
        core.close()
    }

    /// `SQLiteStore(PATH)`.
    public var description: String { "SQLiteStore(\(path))" }

    /// The number of live observations of this store.
    public var observerCount: Int { core.observers.count }

    /// The stored value from the cache.
    public func value(forKey key: String) -> PropertyListValue? {
        core.values.withLock { $0[StoreKey(key)] }
    }

    /// Every stored key and value, from the cache.
    public func snapshot() -> [StoreKey: PropertyListValue] {
        core.values.withLock { $0 }
    }

    /// Every stored key, from the cache.
    public func keys() -> [String] {
        core.values.withLock { $0.keys.map(\.name) }
    }

    /// Stores or removes one value: committed before returning, or queued in deferred mode.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        if case .deferred(let maxDelay) = options.durability {
            try value?.checkNesting()
            try core.enqueueDeferred([StoreKey(key): value], maxDelay: maxDelay)
        } else {
            try transaction { $0[key] = value }
        }
    }

    /// Runs `body` inside one `BEGIN IMMEDIATE` transaction: atomic across processes.
    ///
    /// A write to this store from inside `body` (other than through `body`'s transaction) stops
    /// the program with a message: it would wait for itself.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try core.withDatabase(during: "a transaction") { database in try core.write(&database, body) }
    }

    /// Commits every deferred write now; throws when the commit fails (the writes stay queued and
    /// are tried again).
    ///
    /// Does nothing in the other modes, where every write is already committed.
    ///
    /// ```swift
    /// try store.flush()  // before exiting, in deferred mode
    /// ```
    public func flush() throws {
        try core.flush()
    }

    /// Calls `handler` with every change, from this process or another one, until the
    /// observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        core.observers.add(handler)
    }

    /// The core's observers (for tests that wait for delivery).
    var observers: StoreObservers { core.observers }
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
