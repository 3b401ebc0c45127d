#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsSupport
    import PrefsTestSupport
    import Prefs
    import Testing

    @testable import PrefsPostgres

    /// Issue "A fleet never waits on its slowest host": a host cut off or silent at any point
    /// costs the others nothing, and notices itself within a bound.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable), .timeLimit(.minutes(5)))
    struct StalledHostTests {
        /// Runs `body` on a thread of its own and waits for it up to `seconds`: a call that hangs
        /// fails the test instead of hanging it (its thread ends when the server goes).
        private func finishes(
            within seconds: Double, _ body: @escaping @Sendable () throws -> Void
        ) -> (finished: Bool, error: (any Error)?, elapsed: Double) {
            let done = DispatchSemaphore(value: 0)
            let failure = Locked<(any Error)?>(nil)
            let started = Date()
            Thread.detachNewThread {
                do { try body() } catch { failure.withLock { $0 = error } }
                done.signal()
            }
            let finished = done.wait(timeout: .now() + seconds) == .success
            return (finished, failure.withLock { $0 }, Date().timeIntervalSince(started))
        }

        private func replica(_ url: String, automatically: Bool) throws -> SyncedStore {
            try SyncedStore(
                local: MemoryStore(), remote: try PostgresRemote(url: url, namespace: "team"),
                diagnostics: PreferenceDiagnostics { _ in }, automatically: automatically)
        }

        /// Item 1: a host cut off just after sending a push (its network holds every byte since,
        /// both ways, closing nothing) delays no other host's writes: each reaches the other
        /// healthy host within a second, while the cut-off host's session is still open on the
        /// server. (Before, the cut-off session sat in its transaction holding the namespace's
        /// lock, and every other push waited on it until TCP gave up.)
        @Test func aHostCutOffMidPushDelaysNoOtherHost() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let proxy = try StallingProxy(to: server)
            defer { proxy.close() }
            let cut = try replica(proxy.url, automatically: false)
            let b = try replica(server.url, automatically: true)
            let c = try replica(server.url, automatically: true)
            /// The slowest of five writes of B to reach C.
            func slowestOfFiveWrites(_ label: String) async -> Double {
                var slowest = 0.0
                for round in 0..<5 {
                    let value = PropertyListValue.string("\(label) \(round)")
                    let started = Date()
                    try? b.setValue(value, forKey: "fromB")
                    let arrived = await eventually(within: 5) { c.value(forKey: "fromB") == value }
                    #expect(arrived, "\(label), round \(round): B's write reached C")
                    slowest = max(slowest, Date().timeIntervalSince(started))
                }
                return slowest
            }
            _ = await slowestOfFiveWrites("warming up")  // connections made, statements prepared
            let baseline = await slowestOfFiveWrites("baseline")
            try cut.setValue(.string("cut"), forKey: "fromCut")
            // Cut off once its push reached the server: the push takes the namespace's lock.
            proxy.stall(afterClientSends: "pg_advisory_xact_lock")
            let cutSync = Locked<(any Error)??>(nil)
            Thread.detachNewThread {
                do { try cut.syncNow() } catch { cutSync.withLock { $0 = .some(error) } }
                cutSync.withLock { $0 = $0 ?? .some(nil) }
            }
            #expect(await eventually { proxy.markerSeen }, "the push left the cut-off host")
            try await Task.sleep(for: .milliseconds(300))  // the server has it, and runs it

            let slowest = await slowestOfFiveWrites("cut off")
            print(
                "StalledHostTests: the slowest of 5 writes reached the other host in \(Int(slowest * 1000)) ms with a host cut off mid-push, \(Int(baseline * 1000)) ms without"
            )
            // Within 1 s beyond what this machine takes without the cut-off host: the promise,
            // checked where CI runs this suite alone (PREFS_FLEET_ALONE=1). Beside every other
            // suite on two cores a write took up to 2.4 s against a 0.46 s baseline, so there
            // the bound is 2 s beyond it, or three baselines on a machine loaded still more. The
            // fault this guards against is far past either: before, the writes did not arrive
            // within the 5 s each is given above.
            let alone = ProcessInfo.processInfo.environment["PREFS_FLEET_ALONE"] == "1"
            let bound = alone ? 1 + baseline : max(2 + baseline, 3 * baseline)
            #expect(
                slowest <= bound,
                "every write reached the other healthy host within \(bound) s (baseline \(baseline) s\(alone ? ", alone" : ""))"
            )
            // The cut-off host's push was whole: the server took it, and the others have it.
            #expect(await eventually { c.value(forKey: "fromCut") == .string("cut") })
            #expect(
                await eventually(within: 30) { cutSync.withLock { $0 } != nil },
                "the cut-off host's sync ended")
            proxy.close()
        }

        /// Item 3: a connection whose peer stops answering (every byte held, nothing closed, TCP
        /// still acknowledging) is reported as a lost connection within the documented bound,
        /// instead of hanging the sync; once the network heals, the next sync goes through.
        ///
        /// Syncing by itself too, where the listening thread and a background sync share the
        /// connection: a call waiting for the link behind one that timed out fails at once.
        @Test(arguments: [false, true])
        func aConnectionWhosePeerStopsAnsweringIsReportedWithinTheBound(automatically: Bool) async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let proxy = try StallingProxy(to: server)
            defer { proxy.close() }
            let host = try replica(proxy.url, automatically: automatically)
            try host.setValue(.integer(1), forKey: "k")
            try host.syncNow()  // the connection is up, and used
            proxy.stallAll()
            try host.setValue(.integer(2), forKey: "k")
            let bound = PostgresConnection.callBound.timeInterval
            let outcome = finishes(within: bound * 3) { try host.syncNow() }
            print(
                "StalledHostTests: a stalled connection was reported after \(Int(outcome.elapsed * 1000)) ms (automatically: \(automatically))"
            )
            #expect(outcome.finished, "the sync did not hang")
            #expect(
                (outcome.error as? StoreError)?.kind == .connectionLost,
                "\(String(describing: outcome.error))")
            // Syncing by itself, the sync the write started may be the call that waits out the
            // bound, and this one waits for it before failing at once: two bounds at most on a
            // loaded machine (20.1 s seen). Before, it hung past the three bounds given above.
            let allowed = automatically ? 2 * bound + 3 : bound + 3
            #expect(outcome.elapsed <= allowed, "reported within the bound (\(bound) s) and a little")
            #expect(host.status.lastError != nil)
            #expect(host.status.pendingKeys == ["k"])
            proxy.resume()
            try host.syncNow()
            #expect(host.status.pendingKeys == [])
            let other = try replica(server.url, automatically: false)
            try other.syncNow()
            #expect(other.value(forKey: "k") == .integer(2))
        }

        /// Item 2: a host that died while preparing the schema (its session, as the server still
        /// sees it, sits in a transaction holding the schema locks: nothing tells the server
        /// the host is gone) blocks no later connection, from any host, of either kind of store.
        @Test func aHostThatDiedPreparingTheSchemaBlocksNoLaterConnection() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            _ = try PostgresRemote(url: server.url, namespace: "team").pull(after: nil)
            _ = try PostgresStore(url: server.url, namespace: "team")
            let dead = try PostgresConnection(url: server.url, redact: { $0 })
            try dead.run("SET idle_in_transaction_session_timeout = 0")  // a server's default
            try dead.run("BEGIN")
            try dead.run("SELECT pg_advisory_xact_lock(7370216)")
            try dead.run("SELECT pg_advisory_xact_lock(7370215)")
            let url = server.url
            let outcome = finishes(within: 3) {
                let remote = try PostgresRemote(url: url, namespace: "team")
                let entry = SyncEntry(
                    key: "k", value: .integer(1),
                    stamp: SyncStamp(wallMilliseconds: 5, counter: 0, replica: "r"))
                _ = try remote.push([entry])
                _ = try remote.pull(after: nil)
                let store = try PostgresStore(url: url, namespace: "team")
                try store.setValue(.integer(2), forKey: "k")
            }
            print(
                "StalledHostTests: with the schema locks held, a new host worked after \(Int(outcome.elapsed * 1000)) ms"
            )
            #expect(outcome.finished, "later connections do not wait on the dead host")
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            withExtendedLifetime(dead) {}
        }

        /// The same class in `PostgresStore`: its transaction must hold the namespace's lock
        /// across round trips (its body runs here, between them), so a host cut off inside one
        /// delays the namespace's other writers, by the session bound (5 s) and no more; the
        /// delayed write then goes through rather than failing.
        @Test func aPostgresStoreHostCutOffInATransactionDelaysOthersByTheBoundOnly() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let proxy = try StallingProxy(to: server)
            defer { proxy.close() }
            let cut = try PostgresStore(url: proxy.url, namespace: "team")
            let other = try PostgresStore(url: server.url, namespace: "team")
            // Its first transaction prepares each statement as it comes: the sequence's comes
            // once the lock is taken.
            proxy.stall(afterClientSends: "nextval('prefs_seq')")
            Thread.detachNewThread { try? cut.setValue(.integer(1), forKey: "k") }
            #expect(await eventually { proxy.markerSeen }, "the cut-off host took the lock")
            try await Task.sleep(for: .milliseconds(300))
            let outcome = finishes(within: 15) { try other.setValue(.integer(2), forKey: "k") }
            print(
                "StalledHostTests: a PostgresStore write waited \(Int(outcome.elapsed * 1000)) ms behind a host cut off inside its transaction"
            )
            #expect(outcome.finished)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            #expect(outcome.elapsed < 8, "the session bound (5 s) and a little")
        }

        /// Item 4: a store that syncs only when told holds no connection until it is told, and
        /// then the one its syncs use (no listening thread, which would keep one open).
        @Test func aStoreThatSyncsOnlyWhenToldListensOnNothing() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let store = try replica(server.url, automatically: false)
            try await Task.sleep(for: .milliseconds(500))
            #expect(try server.clientConnections() == 0, "no connection before a sync")
            try store.setValue(.integer(1), forKey: "k")
            try store.syncNow()
            #expect(try server.clientConnections(where: "query ILIKE 'LISTEN%'") == 0, "nothing listens")
        }
    }
#endif
