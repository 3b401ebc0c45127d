import Foundation

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

/// A failure of an ``SQLiteStore``, naming the file and the problem.
///
/// ```swift
/// do { _ = try SQLiteStore(path: "/tmp/not-a-db") } catch let error as SQLiteStoreError { print(error) }
/// // /tmp/not-a-db: not a SQLite database (file is not a database)
/// ```
public struct SQLiteStoreError: Error, CustomStringConvertible, LocalizedError {
    /// The kind of problem.
    public enum Kind: Sendable, Equatable {
        /// The file exists but is not a SQLite database.
        case notADatabase
        /// The database is damaged (truncated, overwritten, malformed).
        case corrupt
        /// The file or its folder cannot be opened or created.
        case cannotOpen
        /// The file was written by a newer release of Prefs, with a schema this one does not know.
        case newerSchema(found: Int)
        /// The file, its folder or the file system is read-only.
        case readOnly
        /// The disk (or quota) is full.
        case diskFull
        /// Another process held the write lock longer than the busy timeout.
        case busy
        /// The database holds tables of another program; it was left untouched.
        case foreignDatabase
        /// A value, or a key, is larger than the store can hold.
        case tooLarge
        /// The file at the path is no longer the one the store opened (deleted, or another file
        /// moved over it): writes would reach nobody. Open the store again.
        case replaced
        /// The calling thread already holds the lock it would wait for (a write or an opening of
        /// a store of the same file from inside a transaction): waiting would never end.
        case deadlock
        /// The store's files are protected (data protection on iOS and its siblings) and the
        /// device has not been unlocked since it started: open the store after the first unlock
        /// (`UIApplication.protectedDataDidBecomeAvailableNotification`), or choose
        /// ``SQLiteStore/FileProtection/none`` for a store a background launch must read.
        case protectedDataUnavailable
        /// Background work was cut short because the system is suspending the app (an expiring
        /// activity expired); nothing was changed, and the work is done later.
        case expired
        /// The store was closed (its last reference released) before the operation ran.
        case closed
        /// Any other SQLite error.
        case other
    }

    /// The database file.
    public let path: String
    /// The kind of problem.
    public let kind: Kind
    /// SQLite's own message, or other detail.
    public let detail: String

    /// Creates an error.
    ///
    /// ```swift
    /// SQLiteStoreError(path: "/tmp/p.sqlite", kind: .busy, detail: "database is locked")
    /// ```
    public init(path: String, kind: Kind, detail: String) {
        self.path = path
        self.kind = kind
        self.detail = detail
    }

    /// `PATH: PROBLEM (DETAIL)`.
    public var description: String {
        let problem: String
        switch kind {
        case .notADatabase: problem = "not a SQLite database"
        case .corrupt: problem = "the database is corrupt"
        case .cannotOpen: problem = "cannot open the database"
        case .newerSchema(let found): problem = "written by a newer Prefs (schema version \(found))"
        case .readOnly: problem = "the database is read-only"
        case .diskFull: problem = "the disk is full"
        case .busy: problem = "another process held the database locked too long"
        case .foreignDatabase: problem = "a SQLite database of another program, left untouched"
        case .tooLarge: problem = "too large to store"
        case .replaced: problem = "the file was deleted or replaced since the store opened it"
        case .closed: problem = "the store is closed"
        case .deadlock: problem = "waiting for the lock would never end"
        case .expired: problem = "cut short as the app is suspended"
        case .protectedDataUnavailable: problem = "its files are protected until the device is first unlocked"
        case .other: problem = "SQLite error"
        }
        return "\(path): \(problem) (\(detail))"
    }

    /// True for the kinds that ``SQLiteStore/Options/recreateOnCorruption`` recovers from.
    var isCorruption: Bool { kind == .notADatabase || kind == .corrupt }

    init(path: String, _ failure: SQLiteConnection.Failure) {
        let kind: Kind
        switch failure.primaryCode {
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_CORRUPT: kind = .corrupt
        case SQLITE_CANTOPEN:
            kind = SQLiteStore.FileProtection.kind(ofOpenFailure: failure.systemErrno) ?? .cannotOpen
        case SQLITE_READONLY: kind = .readOnly
        case SQLITE_FULL: kind = .diskFull
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_TOOBIG: kind = .tooLarge
        // An I/O error whose system call ran out of space (growing the WAL or its index, writing
        // a page, syncing) is a full disk, however SQLite names the call.
        case SQLITE_IOERR where failure.systemErrno == ENOSPC || failure.systemErrno == EDQUOT:
            kind = .diskFull
        case SQLITE_IOERR where failure.code == SQLiteStoreError.ioErrorGrowingTheWALIndex:
            kind = .diskFull
        default: kind = .other
        }
        self.init(path: path, kind: kind, detail: failure.description)
    }

    /// `SQLITE_IOERR_SHMSIZE`: the WAL index (`-shm`) could not grow, which a full disk causes.
    static let ioErrorGrowingTheWALIndex: Int32 = 4874

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
