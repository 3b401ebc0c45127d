#if os(Linux) || os(macOS)
    import Foundation
    import PrefsSupport
    import PrefsTestSupport
    import Testing

    @testable import Prefs

    /// Issue "A fleet never waits on its slowest host", what a user sees: a sync in progress and
    /// who runs it, the holder keeping its link while a sync waits on the network, an outage
    /// told to the diagnostics once, and the store's records out of a plain reader's sight.
    @Suite(.serialized) struct SyncProgressTests {
        /// A remote whose pushes wait until `letGo` is signalled.
        private static func waitingRemote() -> (MemoryRemote, DispatchSemaphore, Locked<Int>) {
            let remote = MemoryRemote(MemorySyncServer())
            let letGo = DispatchSemaphore(value: 0)
            let started = Locked(0)
            remote.beforePush.withLock {
                $0 = {
                    started.withLock { $0 += 1 }
                    letGo.wait()
                    letGo.signal()  // once let go, every push goes
                }
            }
            return (remote, letGo, started)
        }

        /// A holder whose sync waits on the remote for two leases keeps the link (it is only
        /// waiting: no other process should take over), and its sync in progress shows in the
        /// status, in this process at once and in another's reading of the file by the next
        /// renewal.
        @Test func aHolderWaitingOnTheRemoteKeepsItsLinkAndShowsItsSync() async throws {
            let path = ScratchFolder.make("progress").appendingPathComponent("shared.sqlite").path
            let (remote, letGo, started) = Self.waitingRemote()
            let lease = Duration.milliseconds(1_500)
            let store = try SyncedStore(
                local: try SQLiteStore(path: path), remote: remote, syncing: .all,
                diagnostics: PreferenceDiagnostics { _ in }, automatically: true,
                now: SyncLink.wallClock, linkLease: lease)
            defer { letGo.signal() }
            #expect(await eventually { SyncLink.holder(path: path + ".sync-link", lease: lease) != nil })
            let before = Date()
            try store.setValue(.string("dark"), forKey: "theme")
            #expect(await eventually { started.withLock { $0 } == 1 }, "the push began")
            let status = store.status
            #expect(status.syncingProcess == getpid())
            #expect(status.syncingSince.map { $0 >= before.addingTimeInterval(-0.01) } == true, "\(status)")

            // Another reader of the file: the lease's renewals say it.
            let reader = try SQLiteStore(path: path)
            #expect(
                await eventually(within: 3) { SyncedStore.kept(in: reader)?.status.syncingSince != nil },
                "a renewal wrote the sync in progress into the lease")
            #expect(SyncedStore.kept(in: reader)?.status.syncingProcess == getpid())
            var lapsed = 0
            let end = ContinuousClock.now + lease * 2
            while ContinuousClock.now < end {
                if SyncLink.holder(path: path + ".sync-link", lease: lease)?.process != getpid() {
                    lapsed += 1
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(lapsed == 0, "the lease lapsed \(lapsed) times while the sync waited")
            #expect(store.holdsLink)

            letGo.signal()
            #expect(await eventually { store.status.pendingKeys.isEmpty && store.status.syncingSince == nil })
            #expect(store.status.lastAttempt != nil)
            #expect(
                await eventually(within: 3) { SyncedStore.kept(in: reader)?.status.syncingSince == nil },
                "the next renewal said the sync ended")
        }

        /// The diagnostics hear that the remote cannot be reached once per outage, not at each
        /// retry; a sync that reaches it ends the outage, and the next one is told again.
        @Test func anOutageIsToldToTheDiagnosticsOnce() throws {
            let remote = MemoryRemote(MemorySyncServer())
            let heard = Locked<[PreferenceIssue]>([])
            let store = try SyncedStore(
                local: MemoryStore(), remote: remote,
                diagnostics: PreferenceDiagnostics { issue in heard.withLock { $0.append(issue) } },
                automatically: false)
            remote.reachable = false
            try store.setValue(.integer(1), forKey: "count")
            for _ in 0..<3 { #expect(throws: MemoryRemote.Unreachable.self) { try store.syncNow() } }
            let first = heard.withLock { $0 }
            #expect(first.count == 1, "\(first)")
            #expect(first.first?.description.contains("could not be reached") == true, "\(first)")
            #expect(first.first?.description.contains("the server cannot be reached") == true, "names why")

            remote.reachable = true
            try store.syncNow()
            #expect(heard.withLock { $0.count } == 1, "an answer is no issue")
            remote.reachable = false
            #expect(throws: MemoryRemote.Unreachable.self) { try store.syncNow() }
            #expect(heard.withLock { $0.count } == 2, "a new outage is told again")
        }

        /// A program reading a replica's file as a plain store, through ``Preferences``, sees
        /// the user's values and none of the synced store's records (`prefs.sync:…`).
        @Test func aPlainReaderOfAReplicaSeesNoRecordsOfSyncing() async throws {
            let path = ScratchFolder.make("plain").appendingPathComponent("replica.sqlite").path
            let remote = MemoryRemote(MemorySyncServer())
            let synced = try SyncedStore(
                local: try SQLiteStore(path: path), remote: remote,
                diagnostics: PreferenceDiagnostics { _ in }, automatically: false)
            try synced.setValue(.string("dark"), forKey: "theme")
            try synced.syncNow()

            let plain = Preferences(store: try SQLiteStore(path: path))
            let heard = Locked<[String]>([])
            let observation = plain.observeAllChanges { change in
                heard.withLock { $0 += change.values.keys.map(\.name) }
            }
            defer { observation.cancel() }
            #expect(plain.storedKeys == ["theme"])
            #expect(Set(plain.dictionaryRepresentation().keys.map(\.name)) == ["theme"])
            try synced.setValue(.string("light"), forKey: "theme")
            try synced.syncNow()
            #expect(await eventually { heard.withLock { $0 }.contains("theme") })
            #expect(heard.withLock { $0 }.allSatisfy { $0 == "theme" }, "\(heard.withLock { $0 })")
            // They are in the file, for the synced store and the tool.
            #expect(plain.store.snapshot().keys.contains { $0.name.hasPrefix("prefs.sync:") })
        }
    }
#endif
