import Foundation

/// What a store's syncing came to, kept in its local store (`prefs.sync:status`), where every
/// process sharing the store, and the `prefs` tool, reads it: when the remote last answered,
/// why it did not, and the writes of this replica that lost.
///
/// ```swift
/// var report = SyncReport(local.value(forKey: SyncedStore.statusKey))
/// report.lastError = nil
/// ```
package struct SyncReport: Equatable {
    package var lastContact: Date?
    /// When the last sync to end, answered or not, had started.
    package var lastAttempt: Date?
    package var lastError: String?
    /// Oldest first, the last ``SyncedStore/conflictsKept``.
    package var conflicts: [SyncConflict] = []

    /// The report kept in `value`; an empty one when there is none (or it is damaged).
    package init(_ value: PropertyListValue?) {
        guard case .dictionary(let entries)? = value else { return }
        if case .date(let date)? = entries["lastContact"] { lastContact = date }
        if case .date(let date)? = entries["lastAttempt"] { lastAttempt = date }
        if case .string(let error)? = entries["lastError"] { lastError = error }
        if case .array(let kept)? = entries["conflicts"] {
            conflicts = kept.compactMap(SyncConflict.init(_:))
        }
    }

    package var propertyList: PropertyListValue {
        var entries: [String: PropertyListValue] = ["conflicts": .array(conflicts.map(\.propertyList))]
        entries["lastContact"] = lastContact.map(PropertyListValue.date)
        entries["lastAttempt"] = lastAttempt.map(PropertyListValue.date)
        entries["lastError"] = lastError.map(PropertyListValue.string)
        return .dictionary(entries)
    }

    /// Adds conflicts, keeping the newest.
    package mutating func add(_ lost: [SyncConflict]) {
        conflicts.append(contentsOf: lost)
        conflicts.removeFirst(max(0, conflicts.count - SyncedStore.conflictsKept))
    }
}

extension SyncConflict {
    fileprivate init?(_ value: PropertyListValue) {
        guard case .dictionary(let entries) = value, case .string(let key)? = entries["key"],
            case .dictionary(let lost)? = entries["lostStamp"], let lostStamp = SyncStamp(propertyList: lost),
            case .dictionary(let won)? = entries["winningStamp"],
            let winningStamp = SyncStamp(propertyList: won)
        else { return nil }
        self.init(key: key, lostValue: entries["lostValue"], lostStamp: lostStamp, winningStamp: winningStamp)
    }

    fileprivate var propertyList: PropertyListValue {
        var entries: [String: PropertyListValue] = [
            "key": .string(key), "lostStamp": .dictionary(lostStamp.propertyList),
            "winningStamp": .dictionary(winningStamp.propertyList),
        ]
        entries["lostValue"] = lostValue
        return .dictionary(entries)
    }
}

extension SyncedStore {
    /// The syncing kept in `store` (a synced store's local store, opened by another process or
    /// the `prefs` tool): its replica, the keys synced, and the status every process shares,
    /// with the process holding a `SQLiteStore`'s link and its sync in progress as its lease
    /// says; `nil` for a store no `SyncedStore` has used.
    ///
    /// ```swift
    /// if let kept = SyncedStore.kept(in: try SQLiteStore(path: path)) { print(kept.status.pendingKeys) }
    /// ```
    package static func kept(in store: any PreferenceStore) -> (
        replica: String, syncedKeys: Int, status: SyncStatus
    )? {
        let snapshot = store.snapshot()
        guard case .string(let replica)? = snapshot[StoreKey(replicaKey)] else { return nil }
        let marks = snapshot.compactMap { key, value -> (String, SyncMark)? in
            guard key.name.hasPrefix(markPrefix), let mark = SyncMark(value) else { return nil }
            return (String(key.name.dropFirst(markPrefix.count)), mark)
        }
        let report = SyncReport(snapshot[StoreKey(statusKey)])
        var status = SyncStatus()
        status.pendingKeys = marks.filter { $0.1.pending }.map(\.0).sorted()
        status.lastContact = report.lastContact
        status.lastAttempt = report.lastAttempt
        status.lastError = report.lastError
        status.conflicts = report.conflicts
        if let file = store as? SQLiteStore, let holder = SyncLink.holder(path: file.path + ".sync-link") {
            // 0: a process of a release before 1.0, which kept its link for its life.
            status.syncingProcess = holder.process == 0 ? nil : holder.process
            status.syncingSince = holder.syncingSince
        }
        return (replica, marks.count, status)
    }
}

extension SyncedStore {
    /// What came of asking the machine's syncing process to sync now.
    package enum SyncRequestOutcome {
        /// No process holds the store's link: none syncs it now (the program that does syncs
        /// when it starts).
        case noProcessSyncs
        /// A sync ended after the request; its report.
        case ended(SyncReport)
        /// None ended within the time given.
        case noAnswer
    }

    /// Asks the process that syncs the store at `path` for the machine (the holder of its link)
    /// to sync now, and waits up to `timeout` for a sync that started after the request to end.
    ///
    /// ```swift
    /// if case .ended(let report) = try SyncedStore.requestSync(of: store, timeout: .seconds(10)) {
    ///     print(report.lastError ?? "synced")
    /// }
    /// ```
    package static func requestSync(of store: SQLiteStore, timeout: Duration) throws -> SyncRequestOutcome {
        guard SyncLink.holder(path: store.path + ".sync-link") != nil else { return .noProcessSyncs }
        let asked = Date()
        try store.setValue(.date(asked), forKey: requestKey)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let report = SyncReport(store.value(forKey: statusKey))
            if let ended = report.lastAttempt, ended >= asked { return .ended(report) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return .noAnswer
    }
}
