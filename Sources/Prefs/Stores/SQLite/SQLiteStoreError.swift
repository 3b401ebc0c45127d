import Foundation
import PrefsJournal

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
    /// The kind of problem: a fixed set of names, open to new ones, so a `switch` over them
    /// needs a `default` and a kind added in a later release breaks no code.
    ///
    /// ```swift
    /// do { try store.setValue(.integer(1), forKey: "k") } catch let error as SQLiteStoreError
    /// where error.kind == .busy { retryLater() }
    /// ```
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static property is spelled (`"busy"`).
        public let rawValue: String

        /// The kind named `rawValue`.
        ///
        /// ```swift
        /// SQLiteStoreError.Kind(rawValue: "busy") == .busy  // true
        /// ```
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The kind's name.
        public var description: String { rawValue }

        /// The file exists but is not a SQLite database.
        public static let notADatabase = Kind(rawValue: "notADatabase")
        /// The database is damaged (truncated, overwritten, malformed).
        public static let corrupt = Kind(rawValue: "corrupt")
        /// The file or its folder cannot be opened or created.
        public static let cannotOpen = Kind(rawValue: "cannotOpen")
        /// The file (database or journal) is in a newer release's format, left untouched.
        ///
        /// The message names the version found.
        public static let newerSchema = Kind(rawValue: "newerSchema")
        /// The file, its folder or the file system is read-only.
        public static let readOnly = Kind(rawValue: "readOnly")
        /// The disk (or quota) is full.
        public static let diskFull = Kind(rawValue: "diskFull")
        /// Another process held the write lock longer than the busy timeout.
        public static let busy = Kind(rawValue: "busy")
        /// The database holds tables of another program; it was left untouched.
        public static let foreignDatabase = Kind(rawValue: "foreignDatabase")
        /// A value, or a key, is larger than the store can hold.
        public static let tooLarge = Kind(rawValue: "tooLarge")
        /// The file at the path is no longer the one the store opened.
        ///
        /// It was deleted, or another file moved over it: writes would reach nobody. Open the
        /// store again.
        public static let replaced = Kind(rawValue: "replaced")
        /// The calling thread already holds the lock it would wait for (a write or an opening of
        /// a store of the same file from inside a transaction): waiting would never end.
        public static let deadlock = Kind(rawValue: "deadlock")
        /// The store's files are protected (data protection on iOS and its siblings) and the
        /// device has not been unlocked since it started: open the store after the first unlock
        /// (`UIApplication.protectedDataDidBecomeAvailableNotification`), or choose
        /// ``SQLiteStore/FileProtection/none`` for a store a background launch must read.
        public static let protectedDataUnavailable = Kind(rawValue: "protectedDataUnavailable")
        /// Background work was cut short because the system is suspending the app (an expiring
        /// activity expired); nothing was changed, and the work is done later.
        public static let expired = Kind(rawValue: "expired")
        /// The store was closed (its last reference released) before the operation ran.
        public static let closed = Kind(rawValue: "closed")
        /// Any other SQLite error.
        public static let other = Kind(rawValue: "other")

        /// How ``SQLiteStoreError/description`` names the kind.
        var problem: String {
            switch self {
            case .notADatabase: "not a SQLite database"
            case .corrupt: "the database is corrupt"
            case .cannotOpen: "cannot open the database"
            case .newerSchema: "written by a newer Prefs"
            case .readOnly: "the database is read-only"
            case .diskFull: "the disk is full"
            case .busy: "another process held the database locked too long"
            case .foreignDatabase: "a SQLite database of another program, left untouched"
            case .tooLarge: "too large to store"
            case .replaced: "the file was deleted or replaced since the store opened it"
            case .closed: "the store is closed"
            case .deadlock: "waiting for the lock would never end"
            case .expired: "cut short as the app is suspended"
            case .protectedDataUnavailable: "its files are protected until the device is first unlocked"
            case .other: "SQLite error"
            default: rawValue
            }
        }
    }

    /// The kind of problem.
    public let kind: Kind
    /// The database file.
    public let path: String
    /// SQLite's own message, or what the store was doing and the system's reason.
    public let message: String

    /// Creates an error.
    ///
    /// ```swift
    /// SQLiteStoreError(path: "/tmp/p.sqlite", kind: .busy, message: "database is locked")
    /// ```
    public init(path: String, kind: Kind, message: String) {
        self.path = path
        self.kind = kind
        self.message = message
    }

    /// `PATH: PROBLEM (MESSAGE)`.
    public var description: String { "\(path): \(kind.problem) (\(message))" }

    /// True for the kinds that ``SQLiteStore/Options/recreateOnCorruption`` recovers from.
    var isCorruption: Bool { kind == .notADatabase || kind == .corrupt }

    init(path: String, _ failure: SQLiteConnection.Failure) {
        let kind: Kind
        switch failure.primaryCode {
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_CORRUPT: kind = .corrupt
        case SQLITE_CANTOPEN:
            kind =
                JournalError.isProtectedData(openFailure: failure.systemErrno, path: path)
                ? .protectedDataUnavailable : .cannotOpen
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
        self.init(path: path, kind: kind, message: failure.description)
    }

    /// `SQLITE_IOERR_SHMSIZE`: the WAL index (`-shm`) could not grow, which a full disk causes.
    static let ioErrorGrowingTheWALIndex: Int32 = 4874

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
