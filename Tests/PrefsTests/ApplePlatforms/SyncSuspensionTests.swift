import Dispatch
import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A synced store's own syncs in an app the system suspends.
///
/// Each runs in the system's background time, its local writes (under the local store's file
/// lock) are the steps the expiry call waits for, and no write starts after it. Run on Linux
/// through a stand-in for `performExpiringActivity` that calls back as iOS does.
@Suite struct SyncSuspensionTests {
    /// A store syncing by itself with `system` standing in for the expiring activities.
    private static func syncing(
        _ link: MemoryRemote, firstRetry: Duration = .milliseconds(200),
        system: @escaping ExpiringActivity.System
    ) throws -> SyncedStore {
        try SyncedStore(
            local: MemoryStore(), remote: link, syncing: .all, diagnostics: IssueRecorder().diagnostics,
            automatically: true, now: { 1_000 }, firstRetry: firstRetry, expiringActivity: system)
    }

    /// Writes `theme` and holds the push that sends it on the "network" until the returned
    /// semaphore is signalled (the sync is then inside its push, holding no lock).
    private static func writeAndStallItsPush(_ store: SyncedStore, _ link: MemoryRemote) throws
        -> DispatchSemaphore
    {
        let inPush = DispatchSemaphore(value: 0)
        let releasePush = DispatchSemaphore(value: 0)
        link.beforePush.withLock {
            $0 = {
                inPush.signal()
                releasePush.wait()
            }
        }
        try store.setValue(.string("dark"), forKey: "theme")
        #expect(inPush.wait(timeout: .now() + 10) == .success, "no sync pushed the write")
        link.beforePush.withLock { $0 = nil }
        return releasePush
    }

    /// The system takes the time back while the push waits on the network: the expiry call
    /// returns at once (it does not wait for the network), the sync writes nothing to the local
    /// store after it, nothing is reported as the remote's failure, and the next sync, granted,
    /// finishes the job.
    @Test func anExpiryDuringAPushReturnsAtOnceAndNothingIsWrittenAfterIt() async throws {
        let server = MemorySyncServer()
        let link = MemoryRemote(server)
        let responders = Locked<[@Sendable (Bool) -> Void]>([])
        // After the expiry the app is suspended: no background time until it comes back.
        let suspended = Locked(false)
        let store = try Self.syncing(link) { reason, respond in
            guard reason.hasPrefix("syncing") else { return respond(false) }
            responders.withLock { $0.append(respond) }
            let refuse = suspended.withLock { $0 }
            DispatchQueue.global().async { respond(refuse) }
        }
        #expect(await eventually { store.status.lastContact != nil }, "the first sync, at start")
        let releasePush = try Self.writeAndStallItsPush(store, link)
        let respond = try #require(responders.withLock { $0.last })
        suspended.withLock { $0 = true }
        let started = ContinuousClock.now
        respond(true)
        let expiryTook = ContinuousClock.now - started
        #expect(expiryTook < .seconds(1), "the expiry call waited \(expiryTook) for the network")
        let contactBefore = store.status.lastContact
        releasePush.signal()
        #expect(await eventually { server.entries["theme"] != nil }, "the push itself went on")
        usleep(300_000)
        // The sync wrote nothing after the expiry (and the syncs asked for since were refused):
        // the write is still marked pending, and the status neither moved nor shows an error.
        #expect(store.status.pendingKeys == ["theme"])
        #expect(store.status.lastContact == contactBefore)
        #expect(store.status.lastError == nil)
        // Back in the foreground, the next sync finishes the job.
        suspended.withLock { $0 = false }
        #expect(await eventually { store.status.pendingKeys.isEmpty }, "the next sync did not follow")
    }

    /// A sync's local write waiting for the local store (another thread's transaction holds
    /// it): the expiry ends the wait, so the expiry call returns at once, not when the other
    /// transaction lets go; nothing is written after it, and the next sync finishes the job.
    ///
    /// Every store of the library: the SQLite store's waits are its own (another thread, another
    /// process, SQLite); `UserDefaultsStore`'s and `MemoryStore`'s are for another thread.
    @Test(arguments: StoreKind.allCases)
    func anExpiryEndsASyncsWaitForTheLocalStore(kind: StoreKind) async throws {
        let server = MemorySyncServer()
        let link = MemoryRemote(server)
        let responders = Locked<[@Sendable (Bool) -> Void]>([])
        let suspended = Locked(false)
        let local = kind.makeStore()
        let store = try SyncedStore(
            local: local, remote: link, syncing: .all, diagnostics: IssueRecorder().diagnostics,
            automatically: true, now: { 1_000 }, firstRetry: .milliseconds(200),
            expiringActivity: { reason, respond in
                let refuse = suspended.withLock { $0 }
                if reason.hasPrefix("syncing") { responders.withLock { $0.append(respond) } }
                DispatchQueue.global().async { respond(refuse) }
            })
        #expect(await eventually { store.status.lastContact != nil }, "the first sync, at start")
        let releasePush = try Self.writeAndStallItsPush(store, link)
        // Another thread's transaction holds the local store for 5 s from now: the push's own
        // local write (marking the write sent) waits for it.
        let holding = DispatchSemaphore(value: 0)
        Thread {
            try? local.transaction { _ in
                holding.signal()
                usleep(5_000_000)
            }
        }.start()
        holding.wait()
        releasePush.signal()
        usleep(300_000)  // the sync is waiting for the local store by now
        // The app is being suspended: the system takes back every background time it gave.
        suspended.withLock { $0 = true }
        let started = ContinuousClock.now
        for respond in responders.withLock({ $0 }) { respond(true) }
        let expiryTook = ContinuousClock.now - started
        #expect(expiryTook < .seconds(2), "the expiry calls waited \(expiryTook) for the local store")
        suspended.withLock { $0 = false }
        #expect(
            await eventually(within: 20) { store.status.pendingKeys.isEmpty }, "the next sync did not follow")
    }

    /// A holder that ends gives the lease back inside the system's background time too (a file
    /// lock): refused the time, it leaves the lease to run out; given it, it gives it back.
    @Test(arguments: [false, true])
    func theLeaseIsGivenBackOnlyInBackgroundTime(refused: Bool) throws {
        let path = TestFiles.uniquePath("link-given-back")
        let askedToGiveBack = Locked(0)
        let system: ExpiringActivity.System = { reason, respond in
            let givingBack = reason.hasPrefix("giving back the sync link")
            if givingBack { askedToGiveBack.withLock { $0 += 1 } }
            DispatchQueue.global().async { respond(givingBack && refused) }
        }
        let lease = Duration.seconds(60)
        do {
            let link = try #require(
                SyncLink(path: path + ".sync-link", lease: lease, expiringActivity: system))
            #expect(link.tryToHold())
        }
        #expect(askedToGiveBack.withLock { $0 } == 1, "the give-back asked for background time")
        let holder = SyncLink.holder(path: path + ".sync-link", lease: lease)
        if refused {
            #expect(holder?.process == getpid(), "refused, the lease was left to run out")
        } else {
            #expect(holder == nil, "given the time, the lease was given back")
        }
    }

    /// The link's lease is held and renewed inside the system's background time (each look is
    /// a file lock in the App Group container): while the system refuses it, nothing is renewed
    /// and the lease lapses, as it would for a suspended app; given time, it is held again.
    @Test func theLinksLeaseIsRenewedOnlyInBackgroundTime() async throws {
        let path = TestFiles.uniquePath("link-in-background-time")
        let lease = Duration.milliseconds(900)
        let refusingLinkLooks = Locked(false)
        let linkLooks = Locked(0)
        let system: ExpiringActivity.System = { reason, respond in
            let looksAtTheLink = reason.hasPrefix("looking at the sync link")
            if looksAtTheLink { linkLooks.withLock { $0 += 1 } }
            let refuse = looksAtTheLink && refusingLinkLooks.withLock { $0 }
            DispatchQueue.global().async { respond(refuse) }
        }
        let store = try SyncedStore(
            local: SQLiteStore(path: path), remote: MemoryRemote(MemorySyncServer()), syncing: .all,
            diagnostics: IssueRecorder().diagnostics, automatically: true, now: { 1_000 },
            linkLease: lease, expiringActivity: system)
        let linkPath = path + ".sync-link"
        #expect(
            await eventually { SyncLink.holder(path: linkPath, lease: lease)?.process == getpid() },
            "never held")
        #expect(
            await eventually { linkLooks.withLock { $0 } >= 3 }, "the renewals asked for no background time")
        refusingLinkLooks.withLock { $0 = true }
        #expect(
            await eventually { SyncLink.holder(path: linkPath, lease: lease) == nil },
            "renewed while the system refused the time")
        refusingLinkLooks.withLock { $0 = false }
        #expect(
            await eventually { SyncLink.holder(path: linkPath, lease: lease)?.process == getpid() },
            "not held again")
        withExtendedLifetime(store) {}
    }

    /// While the system refuses background time, the store's syncs wait; it asks again each
    /// second, and the write goes once the time is given.
    @Test func aRefusedSyncIsAskedForAgain() async throws {
        let server = MemorySyncServer()
        let link = MemoryRemote(server)
        let granting = Locked(true)
        let refusals = Locked(0)
        let store = try Self.syncing(link) { reason, respond in
            let grant = !reason.hasPrefix("syncing") || granting.withLock { $0 }
            if !grant { refusals.withLock { $0 += 1 } }
            DispatchQueue.global().async { respond(!grant) }
        }
        #expect(await eventually { store.status.lastContact != nil }, "the first sync, at start")
        granting.withLock { $0 = false }
        try store.setValue(.string("dark"), forKey: "theme")
        #expect(await eventually { refusals.withLock { $0 } >= 2 }, "a refused sync was not asked for again")
        #expect(server.entries["theme"] == nil, "a sync ran without background time")
        granting.withLock { $0 = true }
        #expect(await eventually { server.entries["theme"] != nil }, "the sync never ran once granted")
        #expect(await eventually { store.status.pendingKeys.isEmpty })
    }
}
