import Foundation

/// One synced write as it travels: a key, its value (`nil` for a removal) and its stamp.
///
/// ```swift
/// let entry = SyncEntry(key: "theme", value: .string("dark"), stamp: stamp)
/// ```
public struct SyncEntry: Equatable, Sendable {
    /// The key written.
    public let key: String
    /// The value written, or `nil` when the key was removed (a tombstone, which wins as a value
    /// does).
    public let value: PropertyListValue?
    /// When and where it was written.
    public let stamp: SyncStamp

    /// An entry of these parts.
    ///
    /// ```swift
    /// let removal = SyncEntry(key: "theme", value: nil, stamp: stamp)
    /// ```
    public init(key: String, value: PropertyListValue?, stamp: SyncStamp) {
        self.key = key
        self.value = value
        self.stamp = stamp
    }
}

/// Where a ``SyncedStore`` sends its writes and finds everyone else's.
///
/// A remote keeps, for each key, the entry with the highest stamp it was given, and hands out
/// what changed since a cursor of its own making. It never decides a conflict any other way:
/// a push of an entry stamped below the one it holds is refused and answered with the one it
/// holds.
///
/// ```swift
/// let refused = try remote.push([SyncEntry(key: "theme", value: .string("dark"), stamp: stamp)])
/// let (entries, cursor) = try remote.pull(after: nil)
/// ```
public protocol SyncRemote: AnyObject, Sendable, CustomStringConvertible {
    /// Sends entries; returns, for each one the remote refused because it holds a higher stamp
    /// for that key, the entry it holds. Throws when the remote cannot be reached (the entries
    /// stay pending and are sent again).
    ///
    /// ```swift
    /// for winner in try remote.push(pending) { print("\(winner.key) is newer there") }
    /// ```
    func push(_ entries: [SyncEntry]) throws -> [SyncEntry]

    /// The entries that changed after `cursor` (`nil`: every entry), in any order, and the
    /// remote's mark after them, which the store keeps (in its local store) for the next pull.
    ///
    /// ```swift
    /// let (entries, next) = try remote.pull(after: savedCursor)
    /// ```
    func pull(after cursor: PropertyListValue?) throws -> (entries: [SyncEntry], cursor: PropertyListValue?)

    /// Calls `handler` when the remote may hold changes not pulled yet (a hint: the store pulls
    /// to find out), or holds another user's entries now, until the observation is cancelled.
    ///
    /// ```swift
    /// let observation = remote.observe { event in print(event) }
    /// ```
    func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation
}

/// What a ``SyncRemote`` tells its store between pulls.
///
/// ```swift
/// let observation = remote.observe { event in
///     if event == .accountChanged { print("another user") }
/// }
/// ```
public enum SyncRemoteEvent: Sendable, Equatable {
    /// Entries may have changed: pull.
    case changed
    /// The remote now holds another account's entries (iCloud's user signed out, or another
    /// signed in). The store forgets the synced values it holds, and this replica's writes not
    /// yet sent (they belong to the account before), then pulls the new account's.
    case accountChanged
}

/// Which keys a ``SyncedStore`` syncs; every other key stays on the device.
///
/// ```swift
/// let store = try SyncedStore(local: local, remote: remote, syncing: .prefixes("Settings.", "Account."))
/// ```
public struct SyncSelection: Sendable {
    private let test: @Sendable (String) -> Bool

    /// Every key.
    public static var all: SyncSelection { SyncSelection { _ in true } }

    /// These keys, by name.
    ///
    /// ```swift
    /// let selection = SyncSelection.keys("theme", "fontSize")
    /// ```
    public static func keys(_ names: String...) -> SyncSelection {
        let names = Set(names.map(StoreKey.init(_:)))
        return SyncSelection { names.contains(StoreKey($0)) }
    }

    /// Keys whose names start with one of these: a group's or a namespace's prefix.
    ///
    /// ```swift
    /// let selection = SyncSelection.prefixes("Settings.")
    /// ```
    public static func prefixes(_ prefixes: String...) -> SyncSelection {
        SyncSelection { name in prefixes.contains { name.hasPrefix($0) } }
    }

    /// Keys for which `predicate` is true.
    ///
    /// ```swift
    /// let selection = SyncSelection.matching { !$0.hasSuffix(".windowFrame") }
    /// ```
    public static func matching(_ predicate: @escaping @Sendable (String) -> Bool) -> SyncSelection {
        SyncSelection(test: predicate)
    }

    /// Whether `key` syncs.
    func contains(_ key: String) -> Bool { test(key) }

    private init(test: @escaping @Sendable (String) -> Bool) { self.test = test }
}

/// A remote whose listener hears what other replicas push, and can answer a pull from that
/// without asking its server (`PostgresRemote`): what the store's own syncs use; an explicit
/// ``SyncedStore/syncNow()`` asks the server.
///
/// ```swift
/// let (entries, cursor) = try remote.pullHeard(after: savedCursor)
/// ```
package protocol SyncRemoteHearingPushes: SyncRemote {
    /// The entries changed after `cursor` as heard, when what was heard covers everything after
    /// it up to the newest push heard of; else as ``SyncRemote/pull(after:)`` finds them.
    func pullHeard(after cursor: PropertyListValue?) throws -> (
        entries: [SyncEntry], cursor: PropertyListValue?
    )
}

/// A remote whose events are only hints of other replicas' pushes, never an account change
/// (`PostgresRemote`): a ``SyncedStore`` that syncs only when told does not observe it, and so
/// holds no listening connection.
package protocol SyncRemoteWithoutAccounts: SyncRemote {}
