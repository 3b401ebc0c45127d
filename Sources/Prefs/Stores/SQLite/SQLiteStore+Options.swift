import Foundation

extension SQLiteStore {
    /// When a write counts as done, and what a crash can take away.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: path, options: .init(durability: .powerSafe))
    /// ```
    public enum Durability: Sendable, Equatable {
        /// A write is in the shared journal before the call returns: it survives the process being
        /// killed at any instant (`kill -9`, a crash), and every other process sees it. A power
        /// loss or an operating-system crash can lose the latest writes that the system had not
        /// yet written back to the disk (on Linux, typically up to about 30 seconds' worth;
        /// everything before a ``SQLiteStore/flush()`` returned is safe); it never corrupts the
        /// file.
        case committed
        /// As ``committed``, and the journal is synced to the disk before the write returns: it
        /// survives a power loss too, at the cost of an `fsync` per write. On Apple platforms the
        /// sync is `F_FULLFSYNC`, since a plain `fsync` there leaves the data in the drive's cache.
        case powerSafe
    }

    /// How a store opens and writes its file.
    ///
    /// ```swift
    /// var options = SQLiteStore.Options()
    /// options.recreateOnCorruption = true
    /// let store = try SQLiteStore(path: path, options: options)
    /// ```
    public struct Options: Sendable {
        /// When a write counts as done; ``Durability/committed`` by default.
        public var durability: Durability
        /// Whether a corrupt file (or one that is not SQLite) is moved aside to
        /// `<name>.corrupt-<timestamp>` and replaced by an empty store, instead of throwing.
        public var recreateOnCorruption: Bool
        /// How long a write waits for another process's write lock before throwing.
        public var busyTimeout: Duration
        /// The longest a store's watch sleeps without looking for other processes' writes.
        ///
        /// Every write wakes the watches that sleep, so this is only a safety net (10 s by
        /// default; a store opened read-only, which cannot ask to be woken, looks at least once a
        /// second). Reads never wait for it: a read looks at the journal itself.
        public var refreshInterval: Duration

        /// Options with the given settings; the defaults suit most programs.
        ///
        /// ```swift
        /// SQLiteStore.Options(durability: .powerSafe)
        /// ```
        public init(
            durability: Durability = .committed, recreateOnCorruption: Bool = false,
            busyTimeout: Duration = .seconds(10), refreshInterval: Duration = .seconds(10)
        ) {
            self.durability = durability
            self.recreateOnCorruption = recreateOnCorruption
            self.busyTimeout = busyTimeout
            self.refreshInterval = refreshInterval
        }
    }

    /// What ``Options/recreateOnCorruption`` did: the problem found and where the bad file went.
    ///
    /// ```swift
    /// if let recovery = store.recovery { log("\(recovery)") }
    /// ```
    public struct CorruptionRecovery: Sendable, CustomStringConvertible {
        /// Why the file could not be used.
        public let error: SQLiteStoreError
        /// Where the bad file was moved.
        public let movedTo: String

        /// One line for logs.
        public var description: String {
            "\(error); moved it to \(movedTo) and started an empty store"
        }
    }
}

/// A failure of an ``SQLiteStore``, naming the file and the problem.
///
/// ```swift
/// do { _ = try SQLiteStore(path: "/tmp/not-a-db") } catch let error as SQLiteStoreError { print(error) }
/// // /tmp/not-a-db: not a SQLite database (file is not a database)
/// ```
public struct SQLiteStoreError: Error, CustomStringConvertible {
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
        case .other: problem = "SQLite error"
        }
        return "\(path): \(problem) (\(detail))"
    }

    /// True for the kinds that ``SQLiteStore/Options/recreateOnCorruption`` recovers from.
    var isCorruption: Bool { kind == .notADatabase || kind == .corrupt }

    init(path: String, _ failure: SQLiteConnection.Failure) {
        let kind: Kind
        switch failure.primaryCode {
        case 26: kind = .notADatabase  // SQLITE_NOTADB
        case 11: kind = .corrupt  // SQLITE_CORRUPT
        case 14: kind = .cannotOpen  // SQLITE_CANTOPEN
        case 8: kind = .readOnly  // SQLITE_READONLY
        case 13: kind = .diskFull  // SQLITE_FULL
        case 5, 6: kind = .busy  // SQLITE_BUSY, SQLITE_LOCKED
        case 18: kind = .tooLarge  // SQLITE_TOOBIG
        default: kind = .other
        }
        self.init(path: path, kind: kind, detail: failure.description)
    }
}
