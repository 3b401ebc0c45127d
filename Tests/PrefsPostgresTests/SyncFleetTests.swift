#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsSupport
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsPostgres

    /// Issue "Settings that follow the user and the fleet", its proof: a fleet on one machine.
    ///
    /// Three replicas (three SQLite files, standing for three hosts), each written by three
    /// processes at once, sync through one PostgreSQL server, each host reaching it only through
    /// a proxy of its own (its network), while the test, at moments a seeded generator picks,
    /// stops the server, ends every connection it has, kills a replica's link holder with
    /// `kill -9`, kills another writer, stops one with SIGSTOP for a while, and cuts one host
    /// off: in the middle of a push, of a pull or of the schema check, at no step in particular,
    /// and once killing the whole host while it is cut off (its network holding every byte both
    /// ways and closing nothing), or resets its connections.
    ///
    /// While a host is cut off, writes made on the two others reach each other within 1 s at
    /// p99 (issue "A fleet never waits on its slowest host"). At the end every writer is killed
    /// mid-write and each replica syncs: every replica holds, for every key, the value of the
    /// write with the highest stamp, and no acknowledged write is lost unless a higher-stamped
    /// write of its key replaced it.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable), .timeLimit(.minutes(10)))
    struct SyncFleetTests {
        /// One of the faults the test injects.
        enum Fault: CaseIterable {
            case serverStopped, connectionsEnded, linkHolderKilled, writerKilled, writerSuspended
            case hostCutMidPush, hostCutMidPull, hostCutMidSchemaCheck, hostCutAnywhere
            case hostKilledWhileCut, hostConnectionsReset
        }

        /// What a host sends at the step it is cut off at (`nil`: at no step in particular), and
        /// whether its connections are reset first (a pull's statement and the schema check
        /// are sent as a connection begins).
        static func cutting(at fault: Fault) -> (marker: String?, resetFirst: Bool)? {
            switch fault {
            case .hostCutMidPush: ("EXECUTE prefs_sync_push", false)
            case .hostCutMidPull: ("AND seq > $2", true)
            case .hostCutMidSchemaCheck: ("to_regclass('prefs_sync')", true)
            case .hostCutAnywhere, .hostKilledWhileCut: (nil, false)
            default: nil
            }
        }

        @Test func threeReplicasAgreeOnTheHighestStampAfterFaults() async throws {
            let seed = UInt64(ProcessInfo.processInfo.environment["PREFS_FLEET_SEED"] ?? "") ?? 0xF1EE7
            // One round of every fault here (swift test stays near 90 s); six in CI, every time.
            let rounds = stressRounds(local: 1, ci: 6)
            print("SyncFleetTests: seed \(seed), \(rounds) rounds of each fault")
            var random = SeededGenerator(state: seed)
            func pick(_ range: ClosedRange<Int>) -> Int {
                range.lowerBound + Int(random.next() % UInt64(range.count))
            }

            let server = try PostgresServer()
            defer { server.remove() }
            let folder = ScratchFolder.make("fleet")
            defer { try? FileManager.default.removeItem(at: folder) }
            let paths = (0..<3).map { folder.appendingPathComponent("replica\($0).sqlite").path }
            let namespace = "fleet"
            let keyCount = 6
            // Each host's network.
            let proxies = try (0..<3).map { _ in try StallingProxy(to: server) }
            defer { for proxy in proxies { proxy.close() } }

            var writers: [(replica: Int, child: ChildProcess)] = []
            var finished: [ChildOutput] = []
            var started = 0
            func startWriter(on replica: Int) throws {
                started += 1
                let child = try Helper.start([
                    "fleet-writer", paths[replica], proxies[replica].url, namespace, "w\(started)",
                    String(random.next() % 1_000_000), String(keyCount),
                ])
                writers.append((replica, child))
            }
            func stopWriter(_ child: ChildProcess) {
                child.killIfRunning()
                finished.append(child.finish())
                writers.removeAll { $0.child === child }
            }
            defer { for writer in writers { writer.child.killIfRunning() } }
            for replica in 0..<3 {
                // One first, so that the file exists before the others open it.
                try startWriter(on: replica)
                #expect(await eventually { writers.last!.child.currentStdout.contains("ready") })
                try startWriter(on: replica)
                try startWriter(on: replica)
            }
            #expect(
                await eventually {
                    (0..<3).allSatisfy { replica in
                        writers.contains { $0.replica == replica && $0.child.currentStdout.contains("link") }
                    }
                }, "each replica has its link holder")

            // A store per host beside its writers, through the host's proxy: how long a write
            // takes to reach another host, with every host healthy and with one cut off.
            let probes = try FleetProbes(urls: proxies.map(\.url), namespace: namespace)
            _ = await probes.propagations(among: [0, 1, 2], rounds: 1)  // connected, prepared
            let healthy = await probes.propagations(among: [0, 1, 2], rounds: 2)
            var whileCut: [Double] = []

            var faults = Array(repeating: Fault.allCases, count: rounds).flatMap { $0 }
            faults.shuffle(using: &random)
            for fault in faults {
                try await Task.sleep(for: .milliseconds(pick(300...1_200)))
                if let cut = Self.cutting(at: fault) {
                    let host = pick(0...2)
                    let proxy = proxies[host]
                    if let marker = cut.marker {
                        proxy.stall(afterClientSends: marker, everyConnection: true)
                        if cut.resetFirst { proxy.reset() }
                        if !(await eventually(within: 5) { proxy.markerSeen }) {
                            print(
                                "SyncFleetTests: host \(host) did not reach \(fault) within 5 s; cut anyway")
                            proxy.stallAll()
                        }
                    } else {
                        proxy.stallAll()
                    }
                    let others = (0..<3).filter { $0 != host }
                    whileCut += await probes.propagations(among: others, rounds: 2)
                    if fault == .hostKilledWhileCut {
                        for writer in writers where writer.replica == host { stopWriter(writer.child) }
                        for _ in 0..<3 { try startWriter(on: host) }
                        whileCut += await probes.propagations(among: others, rounds: 1)
                    }
                    proxy.resume()
                    continue
                }
                switch fault {
                case .serverStopped:
                    try server.stop(mode: pick(0...1) == 0 ? "immediate" : "fast")
                    try await Task.sleep(for: .milliseconds(pick(300...1_500)))
                    try server.start()
                case .connectionsEnded:
                    let connection = try PostgresConnection(url: server.url, redact: { $0 })
                    _ = try connection.run(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                        """)
                case .linkHolderKilled:
                    let replica = pick(0...2)
                    let holder = writers.first {
                        $0.replica == replica && $0.child.currentStdout.contains("link")
                    }
                    if let holder { stopWriter(holder.child) }
                    try startWriter(on: replica)
                case .writerKilled:
                    let victim = writers[pick(0...(writers.count - 1))]
                    stopWriter(victim.child)
                    try startWriter(on: victim.replica)
                case .hostConnectionsReset:
                    proxies[pick(0...2)].reset()
                    whileCut += await probes.propagations(among: [0, 1, 2], rounds: 1)
                case .hostCutMidPush, .hostCutMidPull, .hostCutMidSchemaCheck, .hostCutAnywhere,
                    .hostKilledWhileCut:
                    break  // above
                case .writerSuspended:
                    let victim = writers[pick(0...(writers.count - 1))].child
                    victim.signal(SIGSTOP)
                    // Resumed even when the test is cancelled: a writer left stopped would hold the
                    // journal's lock (and the run) for good.
                    try? await Task.sleep(for: .milliseconds(pick(500...2_000)))
                    victim.signal(SIGCONT)
                }
            }
            // Within 1 s at p99 while a host was cut off. Run beside every other suite (swift
            // test on two cores), a write takes up to 2 s to reach another host with every host
            // healthy: there, within three times what it takes then. CI also runs this suite
            // alone (PREFS_FLEET_ALONE=1), where the bound is the promise itself: 1 s.
            let alone = ProcessInfo.processInfo.environment["PREFS_FLEET_ALONE"] == "1"
            let healthyP99 = FleetProbes.p99(healthy)
            let cutP99 = FleetProbes.p99(whileCut)
            let bound = alone ? 1 : max(1, 3 * healthyP99)
            print(
                "SyncFleetTests: a write reached another healthy host within \(Int(cutP99 * 1000)) ms at p99 of \(whileCut.count) with a host cut off or reset (slowest \(Int((whileCut.max() ?? 0) * 1000)) ms), \(Int(healthyP99 * 1000)) ms with every host healthy; bound \(bound) s\(alone ? " (alone)" : "")"
            )
            #expect(
                cutP99 <= bound,
                "p99 \(cutP99) s with a host cut off (\(healthyP99) s with none): \(whileCut.sorted().suffix(5))"
            )

            // The writes flowed while the faults came, not only in the syncs below.
            let remote = try PostgresRemote(url: server.url, namespace: namespace)
            var replicasHeard: Set<String> = []
            #expect(
                await eventually(within: 20) {
                    let entries = (try? remote.pull(after: nil).entries) ?? []
                    // The writers' replicas: the probes are replicas of their own.
                    replicasHeard = Set(entries.map(\.stamp.replica)).subtracting(
                        probes.stores.map(\.replica))
                    return replicasHeard.count == 3
                }, "every replica's writes reached the server during the run: \(replicasHeard)")

            // Every writer killed in the middle of its writes: what it acknowledged is kept locally.
            for writer in writers { stopWriter(writer.child) }
            var writes = SyncedWrites()
            for output in finished { writes.read(output.stdout) }
            let acknowledged = writes.acknowledgedCount
            print("SyncFleetTests: \(started) writers, \(acknowledged) writes acknowledged")
            #expect(acknowledged > 100)

            // Each replica syncs: the first round sends what was pending, the second brings
            // every replica what the others sent.
            let stores = try paths.map { path in
                try SyncedStore(
                    local: try SQLiteStore(path: path),
                    remote: try PostgresRemote(url: server.url, namespace: namespace),
                    syncing: .all, diagnostics: .oncePerKey { _ in }, automatically: false)
            }
            for _ in 0..<2 {
                for store in stores { try store.syncNow() }
            }
            for store in stores { #expect(store.status.pendingKeys == []) }
            let held = Dictionary(
                try remote.pull(after: nil).entries.map { ($0.key, $0) },
                uniquingKeysWith: { first, _ in first })

            let keys = (0..<keyCount).map { "key\($0)" }
            #expect(writes.disagreements(among: stores, keys: keys) == [])
            for key in keys {
                #expect(
                    held[key]?.stamp == stores[0].stamp(forKey: key),
                    "\(key): the server holds what the replicas do")
            }
            #expect(writes.contested(keys) > 0, "replicas wrote the same keys: conflicts were decided")
        }
    }
#endif
