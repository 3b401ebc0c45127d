import Dispatch
import Foundation
import PrefsEngine
import PrefsSupport

/// A local store kept in sync with a remote one: reads and writes are local, and the keys you
/// choose follow the user's other devices or the fleet.
///
/// A read answers from the local store at its speed. A write is durable locally when it returns
/// (as the local store promises) and reaches the remote when it can: pending writes are kept in
/// the local store, so they survive `kill -9` and a restart, and are sent in the background (or
/// by ``syncNow()``). What other replicas wrote is written into the local store, where
/// observers hear it like any other change.
///
/// Conflicts are decided the same way on every replica: each synced write carries a
/// ``SyncStamp`` from a hybrid logical clock, and for each key the highest stamp wins, whatever
/// order writes arrive in; a removal wins the same way. A replica pushes only what it wrote
/// through a `SyncedStore`, never a default, nor a value it found in its local store: a fresh
/// install takes the values that exist remotely. A write of this replica that loses before the
/// remote took it is reported to the diagnostics and kept in ``status`` (``SyncConflict``), so an
/// app can offer it back.
///
/// ```swift
/// let store = try SyncedStore(
///     local: try SQLiteStore(path: path), remote: remote, syncing: .prefixes("Settings."))
/// let prefs = Preferences(store: store)
/// prefs[.theme] = "dark"  // local now, remote soon
/// ```
///
/// `update` and transactions are atomic on the local store; across replicas, only the per-key
/// rule holds (two replicas incrementing one counter offline keep one increment). A program that
/// needs atomic updates across machines uses `PostgresStore` directly.
public final class SyncedStore: PreferenceStore {
    /// Where values are read and written.
    package let local: any PreferenceStore
    /// Where synced writes go, and others' come from.
    package let remote: any SyncRemote
    /// The keys that sync.
    let selection: SyncSelection
    private let diagnostics: PreferenceDiagnostics
    /// This replica's name in stamps, kept in the local store.
    package let replica: String
    /// Whether the store syncs by itself (after writes, on the remote's hints, and again after
    /// a failure, waiting longer each time up to a minute).
    private let automatic: Bool
    /// The wait before the first retry of a sync that failed (doubled for each failure after).
    private let firstRetry: Duration
    /// The wall clock, in milliseconds since 1970 (a test's own clock in tests).
    private let now: @Sendable () -> UInt64
    private let state = Locked(State())
    /// Held for a whole sync: one at a time per store.
    private let cycle = Locked(())
    /// The failure of the last sync that could not reach the remote, and when it ended.
    private let lastFailure = Locked<(ended: ContinuousClock.Instant, error: any Error)?>(nil)
    private let queue = DispatchQueue(label: "Prefs.SyncedStore", qos: .utility)
    /// The remote's hints and, for the process that talks to the remote, the local store's
    /// pending writes from other processes.
    private let observations = Locked<[StoreObservation]>([])
    /// Which process of the machine talks to the remote, for a `SQLiteStore` shared by several
    /// (`nil`: this one, the store being this process's alone).
    private let link: SyncLink?
    /// The local store, when it answers typed reads in its own words (a `SQLiteStore`).
    private let localTypedReads: (any TypedReadStore)?
    /// Stands in for the system's expiring activities in tests (`nil`: the platform's).
    private let expiringActivity: ExpiringActivity.System?
    /// The background time of the sync in progress, if it runs in one: its local writes are its
    /// steps (see ``writeLocally(_:)``).
    private let cycleExpiry = Locked<ExpiringActivity.Expiry?>(nil)

    /// What the store knows of its syncing, besides the local store.
    private struct State {
        /// When the next sync is planned to start, if one is.
        var due: ContinuousClock.Instant?
        /// Which plan is the latest (one planned sooner replaces one planned later).
        var plan: UInt64 = 0
        /// Whether the sync planned is a retry after a failure (a hint may bring it forward).
        var plannedIsRetry = false
        var retryDelay: Duration?
        /// Writes the remote could not take, reported once each.
        var reportedUntaken: Set<SyncStamp> = []
        /// No sync starts before this (after writes the remote lost were marked to send again).
        var quietUntil: ContinuousClock.Instant = .now
        /// The next sync asks the remote (the `prefs` tool requested it), not only what was heard.
        var asked = false
        /// Since when the sync in progress runs, if one does.
        var syncingSince: Date?
        /// Whether the last sync could not reach the remote (the diagnostics heard of it once).
        var unreachable = false
    }

    /// Pairs `local` with `remote`, syncing the keys in `selection`.
    ///
    /// Throws when the local store cannot keep the replica's name (written once, on first use).
    /// With `automatically` (the default) the store pulls at once, pushes after each synced
    /// write, pulls on the remote's hints, and retries what failed; otherwise only
    /// ``syncNow()`` talks to the remote.
    ///
    /// ```swift
    /// let store = try SyncedStore(local: MemoryStore(), remote: remote, syncing: .keys("theme"))
    /// ```
    public convenience init(
        local: any PreferenceStore, remote: any SyncRemote, syncing selection: SyncSelection = .all,
        diagnostics: PreferenceDiagnostics = .shared, automatically: Bool = true
    ) throws {
        try self.init(
            local: local, remote: remote, syncing: selection, diagnostics: diagnostics,
            automatically: automatically, now: { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) })
    }

    /// As the public initializer, with the wall clock given (tests skew it).
    package init(
        local: any PreferenceStore, remote: any SyncRemote, syncing selection: SyncSelection,
        diagnostics: PreferenceDiagnostics, automatically: Bool, now: @escaping @Sendable () -> UInt64,
        firstRetry: Duration = .milliseconds(500), linkLease: Duration = SyncLink.defaultLease,
        expiringActivity: ExpiringActivity.System? = nil
    ) throws {
        self.expiringActivity = expiringActivity
        self.local = local
        self.remote = remote
        self.selection = selection
        self.diagnostics = diagnostics
        self.automatic = automatically
        self.now = now
        self.firstRetry = firstRetry
        localTypedReads = local as? any TypedReadStore
        link =
            automatically
            ? (local as? SQLiteStore).flatMap { sqlite in
                let link = SyncLink(
                    path: sqlite.path + ".sync-link", lease: linkLease, expiringActivity: expiringActivity)
                // Made with its folder's class, which may keep it out while the device is
                // locked: it takes the store's, as the store's other files do.
                sqlite.options.engineSettings.protectFiles(sqlite.path)
                return link
            }
            : nil
        replica = try local.transaction { t in
            if case .string(let name)? = t[Self.replicaKey], !name.isEmpty { return name }
            let name = UUID().uuidString
            t[Self.replicaKey] = .string(name)
            return name
        }
        guard automatically else {
            // Only told to sync, but an account change must still be heard (a remote without
            // accounts is not observed: no listening).
            if !(remote is any SyncRemoteWithoutAccounts) { observeRemote() }
            return
        }
        guard let link, !link.tryToHold() else {
            becomeTheLink()
            return
        }
        tryForTheLink()
    }

    deinit {
        for observation in observations.withLock({ $0 }) { observation.cancel() }
    }

    /// Another process talks to the remote: tries for the link again when the lease it saw
    /// ends, until this process holds it or the store is gone.
    private func tryForTheLink() {
        guard let link else { return }
        queue.asyncAfter(deadline: .now() + link.waitBeforeTrying.timeInterval) { [weak self] in
            guard let self else { return }
            lookAtTheLink { [self] held in
                if held == true { queue.async { [self] in becomeTheLink() } } else { tryForTheLink() }
            }
        }
    }

    /// Tries to hold or renew the link (``SyncLink/tryToHold()``: a file lock for a 48-byte read
    /// and write) as one step of the system's background time, then calls `then` with the
    /// answer; `nil` when the system refused the time or took it back first (an app suspended
    /// holding the lock in an App Group container is ended, `0xdead10cc`).
    private func lookAtTheLink(then: @escaping @Sendable (Bool?) -> Void) {
        guard let link else { return then(nil) }
        ExpiringActivity.runInSteps("looking at the sync link of \(self)", system: expiringActivity) {
            expiry in
            then(expiry.step { link.tryToHold() })
        } refused: {
            then(nil)
        }
    }

    /// Renews the link's lease a few times per lease while this process holds it; gives the
    /// link up when another process took it (this one was stopped or suspended past the lease).
    private func keepTheLink() {
        guard let link else { return }
        queue.asyncAfter(deadline: .now() + link.renewalInterval.timeInterval) { [weak self] in
            guard let self else { return }
            lookAtTheLink { [self] held in
                // Not renewed this time (no background time): the next renewal tries; a lease
                // that lapses meanwhile goes to another process, which this one then sees.
                guard held == false else { return keepTheLink() }
                // Another process talks to the remote now: stop hearing it and the pending writes.
                for observation in observations.withLock({ all in
                    defer { all = [] }
                    return all
                }) {
                    observation.cancel()
                }
                tryForTheLink()
            }
        }
    }

    /// Whether this process talks to the remote for the local store (see ``SyncLink``).
    package var holdsLink: Bool { automatic && (link?.isHeld ?? true) }

    /// Starts talking to the remote: its hints, the local store's pending writes (other
    /// processes' too), requests to sync now (the `prefs` tool's), and a sync now.
    private func becomeTheLink() {
        observeRemote()
        let pendingWrites = local.observe { [weak self] change in
            if change.values[StoreKey(Self.requestKey)] != nil {
                self?.state.withLock { $0.asked = true }
                return self?.scheduleSync(soonerThanPlanned: true) ?? ()
            }
            let pending = change.values.contains { key, change in
                guard key.name.hasPrefix(Self.markPrefix), case .set(let mark) = change else { return false }
                return SyncMark(mark)?.pending == true
            }
            if pending { self?.scheduleSync(after: Self.gathering) }
        }
        observations.withLock { $0.append(pendingWrites) }
        keepTheLink()
        scheduleSync()
    }

    /// Hears the remote: a hint syncs (when syncing by itself) at once, even when a retry was
    /// planned for later (the remote answers again); an account change forgets the synced
    /// values first.
    private func observeRemote() {
        let hints = remote.observe { [weak self] event in
            guard let self else { return }
            guard event == .accountChanged else { return scheduleSync(soonerThanPlanned: true) }
            // On the store's queue, not the notifying thread (the system's, on Apple platforms),
            // which must not wait for a sync in progress; the sync it asks for comes after.
            queue.async { [self] in forgetForTheNewAccount() }
        }
        observations.withLock { $0.append(hints) }
    }

    /// Forgets the other account's values in the system's background time (the removal is a
    /// local write); asked for again a second later while the system refuses the time or takes
    /// it back first, then syncs.
    private func forgetForTheNewAccount() {
        ExpiringActivity.runInSteps(
            "forgetting the other account's values in \(self)", system: expiringActivity
        ) {
            [self] expiry in
            do {
                try forgetSyncedValues(expiry: expiry)
            } catch let error as StoreError where error.kind == .expired {
                return queue.asyncAfter(deadline: .now() + 1) { [self] in forgetForTheNewAccount() }
            } catch {
                diagnostics.report(
                    PreferenceIssue(
                        key: "", store: description,
                        kind: .storeNotice(
                            "the account changed, and the synced values could not be removed: \(error)")
                    ))
            }
            scheduleSync(soonerThanPlanned: true)
        } refused: { [self] in
            queue.asyncAfter(deadline: .now() + 1) { [self] in forgetForTheNewAccount() }
        }
    }

    /// `SyncedStore(local ⇄ remote)`.
    public var description: String { "SyncedStore(\(local) ⇄ \(remote))" }

    // MARK: - The store

    /// The local store's value (`nil` for the store's own records of syncing).
    public func value(forKey key: String) -> PropertyListValue? {
        Self.isReserved(key) ? nil : local.value(forKey: key)
    }

    /// Writes locally, and stamps the write for the remote when the key syncs.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        try transaction { $0[key] = value }
    }

    /// Every value of the local store, without the store's own records of syncing.
    public func snapshot() -> [StoreKey: PropertyListValue] {
        local.snapshot().filter { !Self.isReserved($0.key.name) }
    }

    /// Runs `body` as one transaction of the local store; each synced key it writes is stamped
    /// and becomes pending in the same transaction.
    ///
    /// A key of the store's own records (`prefs.sync:…`) is refused with ``StoreError`` of kind
    /// `.invalidKey`, and nothing is written.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try stampedTransaction(body).result
    }

    /// As ``transaction(_:)``, answering also the stamp each synced key written was given (the
    /// tests check every acknowledged write against what the replicas agree on).
    package func stampedTransaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> (
        result: Result, stamps: [String: SyncStamp]
    ) {
        var stamps: [String: SyncStamp] = [:]
        let result = try local.transaction { t in
            stamps = [:]  // a transaction the local store runs again starts over
            let base = t
            var visible = StoreTransaction(
                read: { Self.isReserved($0) ? nil : base[$0] },
                keys: { base.keys.filter { !Self.isReserved($0) } })
            let result = try body(&visible)
            let writes = visible.writes
            if let reserved = writes.keys.first(where: { Self.isReserved($0.name) }) {
                throw StoreError(
                    kind: .invalidKey, store: description,
                    message: "\"\(reserved.name)\" is a name the store keeps for its records of syncing",
                    keys: [reserved.name])
            }
            var clock = HybridClock(t[Self.clockKey])
            for (key, change) in writes {
                t[key.name] = change.newValue
                // The library's other records (a migration's) describe this replica's own values.
                guard selection.contains(key.name), !ReservedKeys.contains(key.name) else { continue }
                let stamp = clock.stamp(now: now(), replica: replica)
                t[Self.markKey(key.name)] = SyncMark(stamp: stamp, pending: true).propertyList
                stamps[key.name] = stamp
            }
            if !stamps.isEmpty { t[Self.clockKey] = clock.propertyList }
            return result
        }
        if !stamps.isEmpty { scheduleSync(after: Self.gathering) }
        return (result, stamps)
    }

    /// Calls `handler` with every change of the local store's values: this process's writes,
    /// other processes' (as the local store sees them), and what syncing brought.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        local.observe { change in
            let visible = change.values.filter { !Self.isReserved($0.key.name) }
            if !visible.isEmpty { handler(StoreChange(values: visible)) }
        }
    }

    // MARK: - Syncing

    /// Pulls what other replicas wrote, then pushes this replica's pending writes.
    ///
    /// Throws when the remote cannot be reached; nothing is lost (pending writes stay pending,
    /// and the next sync sends them).
    ///
    /// ```swift
    /// try synced.syncNow()
    /// synced.status.pendingKeys  // [] once the remote took everything
    /// ```
    public func syncNow() throws {
        try sync(asking: true)
    }

    /// Pulls, then pushes.
    ///
    /// `asking`: the pull asks the remote; otherwise it may be answered by
    /// what the remote's listener heard (``SyncRemoteHearingPushes``), which is all a sync the
    /// store starts by itself needs: a push it has not heard yet is followed by its hint.
    ///
    /// A sync that waited for another one, which could not reach the remote, fails as it did:
    /// trying again at once would wait as long again (on a silent connection, the remote's
    /// whole bound), and the failure is a moment old.
    ///
    /// `expiry`: the system's background time this sync runs in (a sync the store starts by
    /// itself); once taken back, the sync writes nothing more to the local store and throws
    /// `.expired`, neither reported nor counted as the remote's failure.
    private func sync(asking: Bool, expiry: ExpiringActivity.Expiry? = nil) throws {
        let requested = ContinuousClock.now
        try cycle.withLock { _ in
            cycleExpiry.withLock { $0 = expiry }
            defer { cycleExpiry.withLock { $0 = nil } }
            if let failed = lastFailure.withLock({ $0 }), failed.ended > requested { throw failed.error }
            let started = Date()
            state.withLock { $0.syncingSince = started }
            link?.syncingSince.store(UInt64(max(0, started.timeIntervalSince1970 * 1000)))
            defer {
                state.withLock { $0.syncingSince = nil }
                link?.syncingSince.store(0)
            }
            do {
                let since = try locally { localValue(forKey: Self.cursorKey) }
                let hearing = asking ? nil : remote as? any SyncRemoteHearingPushes
                let (entries, cursor) = try hearing?.pullHeard(after: since) ?? remote.pull(after: since)
                try merge(entries, cursor: cursor, complete: since == nil)
                try push()
                try report {
                    $0.lastContact = Date()
                    $0.lastAttempt = started
                    $0.lastError = nil
                }
                state.withLock { $0.unreachable = false }
            } catch let error as StoreError where error.kind == .expired {
                throw error
            } catch {
                try? report {
                    $0.lastAttempt = started
                    $0.lastError = "\(error)"
                }
                if (error as? StoreError)?.kind != .tooLarge {
                    lastFailure.withLock { $0 = (.now, error) }
                    reportUnreachable(error)
                }
                throw error
            }
        }
    }

    /// Tells the diagnostics that the remote cannot be reached, once per outage.
    ///
    /// Once: at the first failure after a sync that reached it (or after the store began). The
    /// next failures of the same outage are in ``status`` only (a retry every minute at most
    /// would otherwise repeat it for as long as the network is down).
    private func reportUnreachable(_ error: any Error) {
        let first = state.withLock { state in
            defer { state.unreachable = true }
            return !state.unreachable
        }
        guard first else { return }
        diagnostics.report(
            PreferenceIssue(
                key: "", store: description,
                kind: .storeNotice(
                    "the remote could not be reached: \(error); writes made meanwhile stay here and are sent once it answers (said once until it does)"
                )))
    }

    /// Where syncing stands: what waits for the remote, when it last answered, what failed,
    /// and the writes of this replica that lost.
    ///
    /// ```swift
    /// if let error = synced.status.lastError { print("offline: \(error)") }
    /// ```
    ///
    /// Kept in the local store: every process sharing it sees the same, and so does the `prefs`
    /// tool (`prefs sync-status DOMAIN`).
    public var status: SyncStatus {
        var status = Self.kept(in: local)?.status ?? SyncStatus()
        // This process's own sync is known here as it starts, not only at the lease's renewal.
        if holdsLink || link == nil {
            let since = state.withLock { $0.syncingSince }
            if automatic || since != nil { status.syncingProcess = getpid() }
            status.syncingSince = since
        }
        return status
    }

    /// Changes the report kept in the local store.
    private func report(_ change: (inout SyncReport) -> Void) throws {
        try writeLocally { t in
            var report = SyncReport(t[Self.statusKey])
            change(&report)
            t[Self.statusKey] = report.propertyList
        }
    }

    /// The stamp of the value this replica holds for `key`, if it was synced.
    package func stamp(forKey key: String) -> SyncStamp? {
        SyncMark(local.value(forKey: Self.markKey(key)))?.stamp
    }

    /// The writes not yet taken by the remote, read from one snapshot of the local store (a
    /// value and its stamp always together).
    package func pendingEntries() -> [SyncEntry] {
        let snapshot = localSnapshot()
        return snapshot.compactMap { key, value in
            guard key.name.hasPrefix(Self.markPrefix), let mark = SyncMark(value), mark.pending else {
                return nil
            }
            let name = String(key.name.dropFirst(Self.markPrefix.count))
            return SyncEntry(key: name, value: snapshot[StoreKey(name)], stamp: mark.stamp)
        }
    }

    /// Removes every synced value, its stamp and the cursor, in one local transaction.
    ///
    /// What the remote held belonged to another account. This replica's writes not sent yet go
    /// too (they were that account's), each reported.
    ///
    /// `expiry`: the system's background time it runs in; the removal is its one step.
    package func forgetSyncedValues(expiry: ExpiringActivity.Expiry? = nil) throws {
        let forgotten = try cycle.withLock { _ in
            cycleExpiry.withLock { $0 = expiry }
            defer { cycleExpiry.withLock { $0 = nil } }
            return try writeLocally { t -> [String] in
                var pending: [String] = []
                for name in t.keys where name.hasPrefix(Self.markPrefix) {
                    let key = String(name.dropFirst(Self.markPrefix.count))
                    if SyncMark(t[name])?.pending == true { pending.append(key) }
                    t[key] = nil
                    t[name] = nil
                }
                t[Self.cursorKey] = nil
                return pending.sorted()
            }
        }
        for key in forgotten {
            diagnostics.report(
                PreferenceIssue(
                    key: key, store: description,
                    kind: .storeNotice(
                        "the account changed before this write was sent; it was the other account's, and is gone"
                    )))
        }
    }

    /// Sends the pending writes; what the remote refused (it holds a higher stamp) is merged
    /// first, while still pending here, so each such loss is reported.
    ///
    /// Entries the remote cannot take at all (a ``StoreError`` of kind `.tooLarge` naming their
    /// keys: a quota, a size limit) stay pending, each reported once; the others are sent again
    /// (the remote may have taken them or not), and the error is thrown for ``status`` to show.
    private func push() throws {
        let pending = try locally { pendingEntries() }
        guard !pending.isEmpty else { return }
        var refused: [SyncEntry] = []
        var untaken: Set<String> = []
        var failure: StoreError?
        do {
            refused = try remote.push(pending)
        } catch let error as StoreError where error.kind == .tooLarge && !error.keys.isEmpty {
            (untaken, failure) = (Set(error.keys), error)
            // A remote may have taken the others or not (PostgreSQL's transaction took none):
            // they go again, and what it refuses of them is merged as after any push.
            let others = pending.filter { !untaken.contains($0.key) }
            if !others.isEmpty { refused = try remote.push(others) }
            let fresh = state.withLock { state in
                pending.filter { untaken.contains($0.key) && state.reportedUntaken.insert($0.stamp).inserted }
            }
            for entry in fresh {
                diagnostics.report(
                    PreferenceIssue(
                        key: entry.key, store: description,
                        kind: .storeNotice(
                            "the remote cannot take this write, kept here until a smaller one replaces it: \(error.message)"
                        )))
            }
        }
        if !refused.isEmpty { try merge(refused, cursor: nil, keepingCursor: true) }
        try writeLocally { t in
            for entry in pending where !untaken.contains(entry.key) {
                let key = Self.markKey(entry.key)
                // Unless written again meanwhile (a new stamp, pending again).
                if let mark = SyncMark(t[key]), mark.stamp == entry.stamp, mark.pending {
                    t[key] = SyncMark(stamp: mark.stamp, pending: false).propertyList
                }
            }
        }
        if let failure { throw failure }
    }

    /// Applies entries from the remote in one local transaction: each whose stamp is above the
    /// one held here replaces the value (a pending write of this replica it replaces is
    /// reported); one below it makes this replica's write pending again (the remote holds an
    /// older write: a remote whose own order is by arrival, such as iCloud's).
    ///
    /// `complete`: the entries are every entry the remote holds (a pull after no cursor). A write
    /// of this replica marked sent that the remote does not hold was lost on the way (iCloud
    /// discards writes made before its first download from the server, as Apple documents): it
    /// becomes pending again, and the next sync waits a little (a remote still discarding would
    /// otherwise be sent the same write over and over).
    private func merge(
        _ entries: [SyncEntry], cursor: PropertyListValue?, keepingCursor: Bool = false,
        complete: Bool = false
    ) throws {
        var lost: [SyncConflict] = []
        var resent = false
        try writeLocally { t in
            if complete {
                let held = Set(entries.map { StoreKey($0.key) })
                for name in t.keys where name.hasPrefix(Self.markPrefix) {
                    let key = String(name.dropFirst(Self.markPrefix.count))
                    guard !held.contains(StoreKey(key)), selection.contains(key),
                        let mark = SyncMark(t[name]), !mark.pending
                    else { continue }
                    t[name] = SyncMark(stamp: mark.stamp, pending: true).propertyList
                    resent = true
                }
            }
            var clock = HybridClock(t[Self.clockKey])
            for entry in entries where !ReservedKeys.contains(entry.key) && selection.contains(entry.key) {
                clock.observe(entry.stamp)
                let markKey = Self.markKey(entry.key)
                let mine = SyncMark(t[markKey])
                if let mine, mine.stamp >= entry.stamp {
                    if mine.stamp > entry.stamp, !mine.pending {
                        t[markKey] = SyncMark(stamp: mine.stamp, pending: true).propertyList
                    } else if mine.stamp == entry.stamp, mine.pending {
                        // This very write, back from the remote: it has it.
                        t[markKey] = SyncMark(stamp: mine.stamp, pending: false).propertyList
                    }
                    continue
                }
                if let mine, mine.pending {
                    lost.append(
                        SyncConflict(
                            key: entry.key, lostValue: t[entry.key], lostStamp: mine.stamp,
                            winningStamp: entry.stamp))
                }
                t[entry.key] = entry.value
                t[markKey] = SyncMark(stamp: entry.stamp, pending: false).propertyList
            }
            t[Self.clockKey] = clock.propertyList
            if !keepingCursor { t[Self.cursorKey] = cursor }
            if !lost.isEmpty {
                var report = SyncReport(t[Self.statusKey])
                report.add(lost)
                t[Self.statusKey] = report.propertyList
            }
        }
        if resent { state.withLock { $0.quietUntil = .now + .seconds(2) } }
        for conflict in lost {
            diagnostics.report(
                PreferenceIssue(
                    key: conflict.key, store: description, kind: .storeNotice(conflict.description)))
        }
    }

    /// A sync's write to the local store, as one step of its background time.
    ///
    /// Writing takes the local store's file lock, which an app suspended in an App Group
    /// container must not hold (`0xdead10cc`). The system's expiry call waits for a write in
    /// progress; none starts after.
    ///
    /// The library's stores are written with the expiry too: their waits (for another thread's
    /// write; for a `SQLiteStore` also another process's lock and SQLite) end when the time is
    /// taken back, so the expiry call does not wait for them.
    private func writeLocally<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        guard let expiry = cycleExpiry.withLock({ $0 }) else {
            return try locally { try local.transaction(body) }
        }
        guard let expiring = local as? any ExpiringTransactions else {
            return try locally { try local.transaction(body) }
        }
        return try locally { try expiring.transaction(expiry: expiry, body) }
    }

    /// The local store's values; in a sync's background time, a `SQLiteStore` looking at SQLite
    /// stops waiting when the system takes the time back (its cache answers as it is).
    private func localSnapshot() -> [StoreKey: PropertyListValue] {
        guard let sqlite = local as? SQLiteStore, let expiry = cycleExpiry.withLock({ $0 }) else {
            return local.snapshot()
        }
        return sqlite.snapshot(expiry: expiry)
    }

    /// One local value, read as ``localSnapshot()`` reads.
    private func localValue(forKey key: String) -> PropertyListValue? {
        guard let sqlite = local as? SQLiteStore, let expiry = cycleExpiry.withLock({ $0 }) else {
            return local.value(forKey: key)
        }
        return sqlite.value(forKey: key, expiry: expiry)
    }

    /// A sync's use of the local store, as one step of its background time.
    ///
    /// A read too may open SQLite (catching up with records another process moved there), which
    /// takes its locks.
    private func locally<Result>(_ body: () throws -> Result) throws -> Result {
        guard let expiry = cycleExpiry.withLock({ $0 }) else { return try body() }
        guard let done = try expiry.step(body) else {
            throw StoreError(
                kind: .expired, store: description,
                message:
                    "the system took the background time back before this sync used the local store; it syncs again later"
            )
        }
        return done
    }

    /// Whether a sync is planned (a retry, or one a write or a hint asked for), for the tests.
    package var isSyncPlanned: Bool { state.withLock { $0.due != nil } }

    /// Starts a sync on the store's queue after `delay`, unless one is planned already: a
    /// planned retry is replaced when `soonerThanPlanned` (a hint from the remote cuts a retry's
    /// wait; a write does not, so writes made offline do not knock on an unreachable remote),
    /// and nothing replaces a sync gathering writes (a push's own hint would, push after push).
    ///
    /// A sync that fails is tried again later, waiting twice as long each time up to a minute.
    /// Entries the remote cannot take (`.tooLarge`) are not such a failure: they stay pending,
    /// reported, and go with the next sync a write or a hint starts, never holding others back.
    private func scheduleSync(
        after delay: Duration = .zero, soonerThanPlanned: Bool = false, retrying: Bool = false
    ) {
        guard holdsLink else { return }
        let planned = state.withLock { state -> (plan: UInt64, wait: Duration)? in
            let wait = max(delay, state.quietUntil - .now)
            let due = ContinuousClock.now + wait
            if let planned = state.due, !(soonerThanPlanned && state.plannedIsRetry) || planned <= due {
                return nil
            }
            state.due = due
            state.plannedIsRetry = retrying
            state.plan &+= 1
            return (state.plan, wait)
        }
        guard let planned else { return }
        queue.asyncAfter(deadline: .now() + planned.wait.timeInterval) { [weak self] in
            guard let self else { return }
            let current = state.withLock { state -> Bool? in
                guard state.plan == planned.plan else { return nil }  // replaced by a sooner one
                state.due = nil
                defer { state.asked = false }
                return state.asked
            }
            guard let asking = current else { return }
            // In the system's background time where there is such a thing (the sync writes the
            // local store, under its file lock); refused, it is asked for again in a second.
            ExpiringActivity.runInSteps("syncing \(self)", system: expiringActivity) { [self] expiry in
                syncAsPlanned(asking: asking, expiry: expiry)
            } refused: { [self] in
                scheduleSync(after: .seconds(1), retrying: true)
            }
        }
    }

    /// A sync ``scheduleSync(after:soonerThanPlanned:retrying:)`` planned, and the next one
    /// when it fails.
    private func syncAsPlanned(asking: Bool, expiry: ExpiringActivity.Expiry) {
        do {
            try sync(asking: asking, expiry: expiry)
            state.withLock { $0.retryDelay = nil }
        } catch let error as StoreError where error.kind == .tooLarge {
            state.withLock { $0.retryDelay = nil }
        } catch let error as StoreError where error.kind == .expired {
            // Not the remote's failure: the app was going to the background.
            scheduleSync(after: firstRetry, retrying: true)
        } catch {
            let next = state.withLock { state in
                let next = min(state.retryDelay.map { $0 * 2 } ?? firstRetry, .seconds(60))
                state.retryDelay = next
                return next
            }
            scheduleSync(after: next, retrying: true)
        }
    }

    // MARK: - The store's own records, in the local store

    /// How long a sync a write asks for waits for more writes to gather: a burst of writes (from
    /// any process sharing the store) goes to the remote in one push, not one push each (with a
    /// write every 5 ms, about a fifth of the server's work per write; see the benchmark's
    /// synced fleet).
    static let gathering: Duration = .milliseconds(20)
    /// The conflicts ``status`` keeps, newest last.
    static let conflictsKept = 100
    /// Every name the store keeps for itself starts so.
    static let reservedPrefix = ReservedKeys.syncPrefix
    static let markPrefix = "prefs.sync:stamp:"
    static let clockKey = "prefs.sync:clock"
    static let cursorKey = "prefs.sync:cursor"
    static let replicaKey = "prefs.sync:replica"
    static let statusKey = "prefs.sync:status"
    /// Written by another process (the `prefs` tool) to ask the link holder to sync now.
    static let requestKey = "prefs.sync:request"

    /// Whether `key` is one of the store's own names; a look at the first byte first, since
    /// every typed read asks (a prefix comparison of strings was a third of a synced read).
    static func isReserved(_ key: String) -> Bool {
        key.utf8.first == UInt8(ascii: "p") && key.hasPrefix(reservedPrefix)
    }
    static func markKey(_ key: String) -> String { markPrefix + key }
}

/// What is kept beside a synced key: its stamp, and whether the remote has taken it yet.
struct SyncMark: Equatable {
    let stamp: SyncStamp
    let pending: Bool

    init(stamp: SyncStamp, pending: Bool) {
        self.stamp = stamp
        self.pending = pending
    }

    /// The mark kept in `value`; `nil` for none, or for one damaged (the key then counts as
    /// never synced here: the remote's value wins).
    init?(_ value: PropertyListValue?) {
        guard case .dictionary(let entries)? = value, let stamp = SyncStamp(propertyList: entries),
            case .bool(let pending)? = entries["p"]
        else { return nil }
        self.init(stamp: stamp, pending: pending)
    }

    var propertyList: PropertyListValue {
        var entries = stamp.propertyList
        entries["p"] = .bool(pending)
        return .dictionary(entries)
    }
}

/// A write of this replica that lost to a higher-stamped write from elsewhere before the remote
/// took it.
///
/// ```swift
/// for conflict in synced.status.conflicts { print(conflict.key, conflict.lostValue as Any) }
/// ```
public struct SyncConflict: Equatable, Sendable, CustomStringConvertible {
    /// The key both wrote.
    public let key: String
    /// What this replica had written (`nil`: it had removed the key).
    public let lostValue: PropertyListValue?
    /// The stamp of the write that lost.
    package let lostStamp: SyncStamp
    /// The stamp of the write that won, now the key's value here.
    package let winningStamp: SyncStamp

    /// One line saying what lost to what.
    public var description: String {
        "a write made here (\(lostStamp)) lost to a newer one (\(winningStamp)); it had written "
            + (lostValue.map { "\($0)" } ?? "a removal")
    }
}

/// Where a ``SyncedStore``'s syncing stands.
///
/// ```swift
/// let status = synced.status
/// print(status.pendingKeys, status.lastContact as Any)
/// ```
public struct SyncStatus: Sendable {
    /// Keys written here that the remote has not taken yet, sorted.
    public internal(set) var pendingKeys: [String] = []
    /// When the remote last answered a whole sync.
    public internal(set) var lastContact: Date?
    /// When the last sync to end, answered or not, had started.
    public internal(set) var lastAttempt: Date?
    /// Why the last sync failed, when it did (`nil` once one succeeds).
    public internal(set) var lastError: String?
    /// The last writes of this replica that lost, oldest first (up to 100).
    public internal(set) var conflicts: [SyncConflict] = []
    /// The process that talks to the remote for the local store (`nil`: none does now).
    ///
    /// This process when it does (a store no other process shares, or the holder of a shared
    /// `SQLiteStore`'s link); another process's identifier when it holds the link; `nil` when
    /// none holds it, or the store syncs only when told and is not syncing now.
    public internal(set) var syncingProcess: Int32?
    /// Since when the sync in progress runs (`nil`: none runs now).
    ///
    /// Another process's sync shows here within two seconds of its start (the link's lease is
    /// renewed that often): a sync that runs long, waiting on a remote that does not answer, is
    /// seen while it waits.
    public internal(set) var syncingSince: Date?
}

extension SyncedStore: TypedReadStore {
    /// The local store's answer in its own words, for ``Preferences``' typed reads: a read through
    /// a synced store costs about what a read from its local store does.
    @usableFromInline
    package func lookUp(_ key: String) -> StoredRead {
        if Self.isReserved(key) { return .cache(nil) }
        return localTypedReads?.lookUp(key) ?? .cache(local.value(forKey: key))
    }

    /// The local store, when it answers typed reads (``Preferences`` then asks it directly, and
    /// hides the names of this store's records itself).
    @usableFromInline
    package var typedReadsAnsweredBy: (any TypedReadStore)? { localTypedReads }
}

/// A store of the library whose transactions take the system's background time: every wait
/// ends, throwing `.expired`, as soon as the system asks for the time back (a synced store's own
/// local writes).
package protocol ExpiringTransactions {
    func transaction<Result>(
        expiry: ExpiringActivity.Expiry, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> Result
}

extension SQLiteStore: ExpiringTransactions {}
extension UserDefaultsStore: ExpiringTransactions {}
extension MemoryStore: ExpiringTransactions {}
