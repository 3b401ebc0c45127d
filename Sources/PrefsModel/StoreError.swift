import Foundation

/// A store's failure, naming the store, the kind of problem and what happened.
///
/// Every store throws this one type: its ``kind`` says what went wrong, the same name for the
/// same problem whichever store met it.
///
/// ```swift
/// do {
///     try prefs.set(0.8, for: .volume)
/// } catch let error as StoreError where error.kind == .busy {
///     retryLater()
/// } catch {
///     print(error)  // /tmp/app.sqlite: the disk is full (database or disk is full)
/// }
/// ```
public struct StoreError: Error, Equatable, CustomStringConvertible, LocalizedError {
    /// The kind of problem: a fixed set of names, open to new ones, so a `switch` over them
    /// needs a `default` and a kind added in a later release breaks no code.
    ///
    /// ```swift
    /// StoreError.Kind(name: "busy") == .busy  // true
    /// ```
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static property is spelled (`"busy"`).
        ///
        /// An open set of names, not an `enum`: a kind a later release adds breaks no `switch`.
        package let name: String

        /// The kind called `name`.
        package init(name: String) { self.name = name }

        /// The kind's name.
        public var description: String { name }

        /// Another thread or process held the store longer than its timeout.
        ///
        /// Two threads that nest transactions on two stores in opposite orders wait for each
        /// other: one of them gets this instead of both waiting forever.
        public static let busy = Kind(name: "busy")
        /// The calling thread already holds what it would wait for (a write, or an opening of a
        /// store of the same file, from inside a transaction; or transactions nested on two
        /// stores in opposite orders by two threads): waiting would never end.
        public static let deadlock = Kind(name: "deadlock")
        /// The file exists but is not a SQLite database.
        public static let notADatabase = Kind(name: "notADatabase")
        /// The database is damaged (truncated, overwritten, malformed).
        public static let corrupt = Kind(name: "corrupt")
        /// The file or its folder cannot be opened or created.
        public static let cannotOpen = Kind(name: "cannotOpen")
        /// The file (database or journal) is in a newer release's format, left untouched.
        ///
        /// The message names the version found.
        public static let newerSchema = Kind(name: "newerSchema")
        /// The file, its folder or the file system is read-only, or the store was opened
        /// read-only.
        public static let readOnly = Kind(name: "readOnly")
        /// The disk (or quota) is full.
        public static let diskFull = Kind(name: "diskFull")
        /// The database holds tables of another program; it was left untouched.
        public static let foreignDatabase = Kind(name: "foreignDatabase")
        /// A value, or a key, is larger than the store can hold; nothing was written.
        ///
        /// In every store of Prefs, a value whose stored encoding takes more than 8 MiB; for a
        /// `UserDefaultsStore`, a write that would take its domain to the platform's size limit.
        public static let tooLarge = Kind(name: "tooLarge")
        /// The file at the path is no longer the one the store opened.
        ///
        /// It was deleted, or another file moved over it: writes would reach nobody. Open the
        /// store again.
        public static let replaced = Kind(name: "replaced")
        /// Protected data is not available until an unlock.
        ///
        /// The store's files are protected (data protection on iOS and its siblings) and the
        /// device has not been unlocked since it started: open the store after the first unlock
        /// (`UIApplication.protectedDataDidBecomeAvailableNotification`), or choose
        /// ``SQLiteStore/FileProtection/none`` for a store a background launch must read. For a
        /// secret key: the Keychain item is not readable while the device is locked, or the
        /// Secret Service's keyring is locked (the message says which).
        public static let protectedDataUnavailable = Kind(name: "protectedDataUnavailable")
        /// Background work was cut short because the system is suspending the app (an expiring
        /// activity expired); nothing was changed, and the work is done later.
        public static let expired = Kind(name: "expired")
        /// The store was closed (its last reference released) before the operation ran.
        public static let closed = Kind(name: "closed")
        /// Foundation refused to open a `UserDefaults` suite: a suite name may not be the app's
        /// own bundle identifier or `NSGlobalDomain` (use ``UserDefaultsStore/standard`` for the
        /// app's own domain).
        public static let suiteRefused = Kind(name: "suiteRefused")
        /// A write to the first of ``StoreError/keys``, which Foundation takes for the stored
        /// key second (spelled differently: canonically equivalent Unicode, such as `"é"` as one
        /// scalar or as two) and would merge with it; nothing was written.
        public static let keyConflict = Kind(name: "keyConflict")
        /// Foundation could not write the domain to disk (`synchronize()` failed, giving no
        /// reason); the values of ``StoreError/keys`` were put back as they were.
        public static let writeFailed = Kind(name: "writeFailed")
        /// A key the store cannot take; nothing was written.
        ///
        /// On `PostgresStore`, one holding a NUL character (PostgreSQL text cannot) or too long
        /// for the index; on `SyncedStore`, one of the names it keeps for its records of syncing
        /// (`prefs.sync:…`); on `UserDefaultsStore`, one of the names it keeps key descriptions
        /// under (`prefs.keys:…`).
        public static let invalidKey = Kind(name: "invalidKey")
        /// No secret store can be reached for a secret key.
        ///
        /// A key stored ``Preferences/StoredForm/secret``: on Linux, libsecret is not installed, the process has no D-Bus session bus, or nothing
        /// on it provides the Secret Service (the keyring daemon is not running, or went away);
        /// the message says which. Nothing is written anywhere else instead.
        public static let secretStoreUnavailable = Kind(name: "secretStoreUnavailable")
        /// Any other failure of the store's engine (SQLite's own error, named in the message).
        public static let other = Kind(name: "other")

        /// How a message names the kind, where the store's own words need a heading.
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
            case .secretStoreUnavailable: "no secret store can be reached"
            case .deadlock: "waiting for the lock would never end"
            case .expired: "cut short as the app is suspended"
            case .protectedDataUnavailable: "its files are protected until the device is first unlocked"
            case .other: "SQLite error"
            default: name
            }
        }
    }

    /// The kind of problem.
    public let kind: Kind
    /// The store, as its `description` names it: a SQLite store's path, a `UserDefaults`
    /// suite, a PostgreSQL server and namespace (never with a password).
    public let storeDescription: String
    /// What went wrong, in one line.
    public let message: String
    /// The keys concerned, where the problem is some keys' (see each ``Kind``); otherwise empty.
    public let keys: [String]

    /// An error of a store of your own, in the shape Prefs's stores use.
    ///
    /// ```swift
    /// throw StoreError(kind: .readOnly, store: "RemoteStore(eu-1)", message: "the server is read-only")
    /// ```
    public init(kind: Kind, store: String, message: String, keys: [String] = []) {
        self.kind = kind
        self.storeDescription = store
        self.message = message
        self.keys = keys
    }

    /// `STORE: MESSAGE`.
    public var description: String { "\(storeDescription): \(message)" }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }

    /// A SQLite store's error: `PATH: PROBLEM (DETAIL)`.
    package init(path: String, kind: Kind, detail: String) {
        self.init(kind: kind, store: path, message: "\(kind.problem) (\(detail))")
    }

    /// True for the kinds that ``SQLiteStore/Options/recreateOnCorruption`` recovers from.
    package var isCorruption: Bool { kind == .notADatabase || kind == .corrupt }
}
