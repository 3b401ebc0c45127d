import Dispatch
import Foundation
import PrefsEngine

/// A store in a SQLite file: durable, safe for several processes at once, crash-safe, and as
/// fast as memory; the default store on Linux.
///
/// ```swift
/// let prefs = Preferences(store: try SQLiteStore(path: "/var/lib/app/prefs.sqlite"))
/// prefs[.volume] = 0.8   // safe against kill -9 before this line returns
/// ```
///
/// **How it writes.** A write is appended to a journal beside the file, `<name>-prefs`, which
/// every process that opens the store maps into memory: it costs about a microsecond, and it
/// survives the process being killed at any instant, because the record is in the operating
/// system's page cache once the call returns. Batches of records are moved into SQLite in one
/// transaction in the background (and when the store closes, or at ``flush()``), so the SQLite
/// file is only ever changed by SQLite transactions and stays readable by any SQLite tool. See
/// ``Durability`` for what a power loss can take.
///
/// **Files.** `<name>` (SQLite), `<name>-wal` and `<name>-shm` (SQLite's own), and
/// `<name>-prefs` (the journal), all readable by their owner only.
///
/// **Consistency.** Reads come from an in-process cache of the whole store. A read first looks
/// at one word of the journal: when another process wrote since, the cache applies its records
/// before answering. So a read that starts after a write returned, in any process, sees it.
/// `update` runs holding the journal's cross-process lock, so it is atomic across processes.
///
/// **Observation.** Changes from this process and from other processes on the same file reach
/// ``observe(_:)`` and everything built on it: a writer wakes the stores that sleep waiting for
/// changes (a futex on Linux, notify(3) on Apple platforms); nothing polls.
///
/// **Failures.** A corrupt file, or one that is not SQLite, throws ``StoreError`` at
/// opening, unless ``Options/recreateOnCorruption`` is set. A journal whose records fail their
/// checksum is cut at the first bad record, and the cut is reported on stderr. A full disk or a
/// read-only file throws from the write, and what was stored stays as it was. When the file is
/// deleted or another file is moved over its path, writes throw
/// ``StoreError/Kind/replaced`` rather than report success for data nobody would read.
///
/// **Closing.** The journal is moved into SQLite and the file closed when the last reference to
/// the store goes away, on the thread that lets go of it: background work never holds the store.
public final class SQLiteStore: PreferenceStore {
    /// The database file.
    public let path: String
    /// The options the store was opened with.
    package let options: Options
    /// Set when the file was corrupt and ``Options/recreateOnCorruption`` replaced it.
    public let recovery: CorruptionRecovery?

    /// The files, the cache and the write path; shared with the watch and background
    /// checkpoints, which hold it (never this object) so that closing stays here.
    let core: SQLiteStoreCore
    /// Wakes the store when another store on the file writes; holds the core weakly.
    let watch: JournalWatch

    /// Opens (creating when needed, with its folders) the store at `path`.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: "\(NSHomeDirectory())/.config/app/prefs.sqlite")
    /// ```
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        let settings = options.engineSettings
        let opened = try StoreEngine.open(path: path, options: settings)
        recovery = opened.recovery.map { CorruptionRecovery(error: $0.error, movedTo: $0.movedTo) }
        let core = SQLiteStoreCore(path: path, options: settings, opened: opened)
        self.core = core
        core.catchUp()  // the journal's records since the last checkpoint
        watch = JournalWatch(
            journal: core.journal, interval: options.refreshInterval,
            wantsWakeups: { [weak core] in (core?.observers.count ?? 0) > 0 },
            look: { [weak core] in core?.lookForChanges() ?? false })
        if let recovery {
            options.diagnostics.report(
                // The issue names the store: the notice says the rest (the path once).
                PreferenceIssue(
                    key: "", store: path,
                    kind: .storeNotice(
                        "\(recovery.error.message); moved it to \(recovery.movedTo) and started an empty store"
                    ))
            )
        }
    }

    deinit {
        // Work in the background ends at its next step first: the thread letting the store go
        // (often the main thread) waits for no checkpoint or look that waits on another process.
        core.endBackgroundWork()
        watch.stop()
        core.close()
    }

    /// `SQLiteStore(PATH)`.
    public var description: String { "SQLiteStore(\(path))" }

    /// What this store's checkpoints cost so far (CPU time, records moved); for the benchmark.
    package var checkpointCost: CheckpointCost { core.checkpointer.cost.withLock { $0 } }

    /// The number of live observations of this store.
    package var observerCount: Int { core.observers.count }

    /// The stored value, from the cache (current with every write made before this call).
    public func value(forKey key: String) -> PropertyListValue? {
        core.value(for: StoreKey(key))
    }

    /// The stored value as the cache answered it: a read slot's words, or its value (see
    /// ``value(forKey:)``); for ``Preferences``' typed reads.
    @usableFromInline
    package func lookUp(_ key: String) -> StoredRead { core.lookUp(StoreKey(key)) }

    /// Every stored key and value, from the cache.
    public func snapshot() -> [StoreKey: PropertyListValue] {
        core.snapshot()
    }

    /// The same in the system's background time: a wait to read SQLite ends when the system
    /// asks for the time back (a synced store's own reads).
    package func snapshot(expiry: ExpiringActivity.Expiry) -> [StoreKey: PropertyListValue] {
        core.snapshot(expiry: expiry)
    }

    /// One value, read so too.
    package func value(forKey key: String, expiry: ExpiringActivity.Expiry) -> PropertyListValue? {
        core.value(for: StoreKey(key), expiry: expiry)
    }

    /// Every stored key, from the cache.
    package func keys() -> [String] {
        core.keys()
    }

    /// Stores or removes one value, durable (as ``Options/durability`` says) before returning.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        try core.set(value, for: StoreKey(key))
    }

    /// Runs `body` holding the journal's cross-process lock, on values current with every
    /// process's writes, and appends its writes as one record: atomic across processes.
    ///
    /// A write to this store from inside `body` (other than through `body`'s transaction) stops
    /// the program with a message: it would wait for itself.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try core.write(body)
    }

    /// The same in the system's background time: every wait ends, throwing `.expired`, as soon
    /// as the system asks for the time back (a synced store's own writes).
    package func transaction<Result>(
        expiry: ExpiringActivity.Expiry, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> Result {
        try core.write(expiry: expiry, body)
    }

    /// Moves every write made so far into SQLite and syncs it to the disk; throws when that
    /// fails (the writes stay in the journal and are moved later).
    ///
    /// Writes are safe against `kill -9` without it; call it where a power loss must not take
    /// the last writes, or to leave a self-contained SQLite file for other tools.
    ///
    /// ```swift
    /// try store.flush()
    /// ```
    public func flush() throws {
        try core.flush()
    }

    /// Calls `handler` with every change, from this process or another one, until the
    /// observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        let observation = core.observers.add(handler)
        if core.observers.count == 1 { watch.kick() }  // the first: the watch now wants wake-ups
        return observation
    }

    /// The core's observers (for tests that wait for delivery).
    var observers: StoreObservers { core.observers }
}

extension SQLiteStore: PrefsOwnStore, TypedReadStore {}

/// Key descriptions in a table of their own beside the values (the engine's `prefs_keys`).
extension SQLiteStore {
    /// The key descriptions published to this store's file.
    package func keyDescriptions() -> [String: PropertyListValue] { core.keyDescriptions() }

    /// Keeps key descriptions in the file, each replacing the one before.
    package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
        try core.publishKeyDescriptions(descriptions)
    }
}
