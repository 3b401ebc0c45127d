import Foundation
import PrefsEngine
import PrefsSupport

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
        /// How long a write waits for another process's (or thread's) write lock before throwing
        /// `.busy`: the same name as `MemoryStore`'s.
        public var lockTimeout: Duration
        /// The longest a store's watch sleeps without looking for other processes' writes.
        ///
        /// Every write wakes the watches of stores with observers, so for them this is only a
        /// safety net (10 s by default; a store opened read-only, which cannot ask to be woken,
        /// looks at least once a second). The watch of a store nobody observes looks only this
        /// often. Reads never wait for it: a read looks at the journal itself. Taken between a
        /// millisecond and a year (a longer one, `.seconds(.max)` say, is a year).
        public var refreshInterval: Duration
        /// The data protection class of the store's files where there is data protection (iOS and
        /// its siblings); ``FileProtection/completeUntilFirstUserAuthentication`` by default.
        public var fileProtection = FileProtection.completeUntilFirstUserAuthentication
        /// Where the store reports what it did or found about its files (a repaired journal, a
        /// file moved aside, values it cannot decode): the program's, ``PreferenceDiagnostics/shared``,
        /// by default (standard error until the program calls
        /// ``PreferenceDiagnostics/bootstrap(_:)``).
        public var diagnostics = PreferenceDiagnostics.shared
        /// Where tests interrupt the store (none in an app).
        package var faults = SQLiteStoreFaults()

        /// Options with the given settings; the defaults suit most programs.
        ///
        /// ```swift
        /// SQLiteStore.Options(durability: .powerSafe)
        /// ```
        public init(
            durability: Durability = .committed, recreateOnCorruption: Bool = false,
            lockTimeout: Duration = .seconds(10), refreshInterval: Duration = .seconds(10)
        ) {
            self.durability = durability
            self.recreateOnCorruption = recreateOnCorruption
            self.lockTimeout = lockTimeout
            self.refreshInterval = refreshInterval
        }
    }

    /// What ``Options/recreateOnCorruption`` did: the problem found and where the bad file went.
    ///
    /// ```swift
    /// if let recovery = store.recovery { print("moved to \(recovery.movedTo): \(recovery.error)") }
    /// ```
    public struct CorruptionRecovery: Sendable {
        /// Why the file could not be used.
        public let error: StoreError
        /// Where the bad file was moved.
        public let movedTo: String

        /// One line for logs.
        package var description: String {
            "\(error); moved it to \(movedTo) and started an empty store"
        }
    }
}

/// Where the store meets its engine (`PrefsEngine`, which holds the journal, the cache, the
/// connection to SQLite and the commit, read and checkpoint paths): the options in the engine's
/// terms, its notices handed to the store's diagnostics.
extension SQLiteStore.Options {
    /// The options in the engine's terms.
    var engineSettings: StoreEngine.Settings {
        let diagnostics = diagnostics
        var settings = StoreEngine.Settings(busyTimeout: lockTimeout) { path, message in
            diagnostics.report(PreferenceIssue(key: "", store: path, kind: .storeNotice(message)))
        }
        settings.powerSafe = durability == .powerSafe
        settings.recreateOnCorruption = recreateOnCorruption
        // A file the class could not be given is told once (each reopen tries again).
        let told = Locked<Set<String>>([])
        settings.protectFiles =
            faults.protectFiles ?? { [fileProtection] path in
                for problem in fileProtection.apply(toStoreAt: path)
                where told.withLock({ $0.insert(problem).inserted }) {
                    diagnostics.report(PreferenceIssue(key: "", store: path, kind: .storeNotice(problem)))
                }
            }
        settings.faults = faults
        return settings
    }
}
