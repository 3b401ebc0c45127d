import PrefsModel

/// Where a test stops or interrupts a ``SQLiteStore`` at a named step (package access; an app
/// never sets it, and a store without it runs no extra code but a `nil` check at each step).
///
/// ```swift
/// var faults = SQLiteStoreFaults()
/// faults.atCheckpointStep = { step in if step == .afterCommit { kill(getpid(), SIGKILL) } }
/// ```
package struct SQLiteStoreFaults: Sendable {
    /// Called at each step of a checkpoint (`.duringMove` only when set: the copy of the records
    /// written meanwhile is then made in two halves, with the call between them).
    package var atCheckpointStep: (@Sendable (StoreEngine.CheckpointStep) -> Void)?
    /// A background checkpoint's expiring activity expires at this step (as when the system
    /// suspends the app): only `.beforeCommit` is checked.
    var expireAtCheckpointStep: StoreEngine.CheckpointStep?
    /// Stands in for the system's expiring activities (`performExpiringActivity`): called with
    /// the reason and the block, which it calls with `false` to run the work and `true` to refuse
    /// it or take the time back, on threads of its choosing, as iOS does.
    var expiringActivity: (@Sendable (String, @escaping @Sendable (Bool) -> Void) -> Void)?
    /// The journal's size at which a write moves it into SQLite itself (64 MiB unless set: a test
    /// reaches a smaller one sooner).
    var journalLimit: Int?
    /// How long a refused background checkpoint waits before it asks again (1 s unless set).
    var refusedCheckpointRetry: Duration?
    /// Called after opening has read the rows and before its read transaction ends.
    var afterLoadingRows: (@Sendable () -> Void)?
    /// Called when a read without the journal's lock has read where the records end and is
    /// about to copy them (another store's checkpoint may move them then).
    var beforeCopyingRecords: (@Sendable () -> Void)?
    /// Asked after each read of SQLite's changed rows: `true` makes the read see nothing newer
    /// than the cache (as an immutable connection through a read-only mount once did, a moment
    /// after a checkpoint committed, while the checkpoint was still in the WAL).
    var seeOlderRows: (@Sendable () -> Bool)?
    /// Stands in for the platform's file protection: whether the journal's data is locked away
    /// now (as on a locked device with `.complete`), for a test on a platform that has none.
    var lockedData: Journal.LockedDataProbe?
    /// Stands in for a locked device refusing to open SQLite's files again (a store of class
    /// `.completeUnlessOpen`: its journal stays open and usable, a closed file does not reopen).
    var sqliteFilesLocked: (@Sendable () -> Bool)?
    /// Called where the store gives its files their protection class, in place of doing so.
    package var protectFiles: (@Sendable (_ path: String) -> Void)?
    /// Whether SQLite's `-wal` and `-shm` are kept between connections, where the platform would
    /// not keep them (only where there is data protection): a test's way to run it on Linux.
    package var keepsJournalFiles: Bool?

    package init() {}
}

extension StoreEngine {
    /// The steps of a checkpoint a test can stop a process at (with `kill -9`, from a fault).
    package enum CheckpointStep: String, Sendable, CaseIterable {
        /// The rows are written, the transaction not yet committed.
        case beforeCommit
        /// Committed; the records are still in the journal.
        case afterCommit
        /// Half-way through copying the records written meanwhile to the top of the journal (only
        /// reached when there are such records).
        case duringMove
        /// The records are dropped from the journal; its lock is still held.
        case afterDrop
    }
}
