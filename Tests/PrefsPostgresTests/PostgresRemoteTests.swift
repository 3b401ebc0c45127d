#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Prefs
    import PrefsSupport
    import PrefsPostgres
    import Testing

    /// Syncing through PostgreSQL (issue "Settings that follow the user and the fleet"): replicas
    /// of a `SyncedStore` meet in one namespace of a throwaway server.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable), .timeLimit(.minutes(10)))
    struct PostgresRemoteTests {
        private func replica(
            _ server: PostgresServer, local: any PreferenceStore = MemoryStore(), automatically: Bool = false
        ) throws -> SyncedStore {
            try SyncedStore(
                local: local, remote: try PostgresRemote(url: server.url, namespace: "team"),
                diagnostics: PreferenceDiagnostics { _ in }, automatically: automatically)
        }

        @Test func replicasMeetOnTheServerAndTheHighestStampWins() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let a = try replica(server)
            let b = try replica(server)
            try a.setValue(.string("dark"), forKey: "theme")
            try a.setValue(.array([.integer(1), .string("two")]), forKey: "list")
            try a.setValue(nil, forKey: "gone")
            try a.syncNow()
            try b.syncNow()
            #expect(b.value(forKey: "theme") == .string("dark"))
            #expect(b.value(forKey: "list") == .array([.integer(1), .string("two")]))
            #expect(b.stamp(forKey: "gone") == a.stamp(forKey: "gone"), "a removal travels as a stamp")

            try b.setValue(.string("light"), forKey: "theme")  // after what b has seen
            try b.syncNow()
            try a.syncNow()
            #expect(a.value(forKey: "theme") == .string("light"))

            // An older write is refused in the statement that would write it, and answered
            // with the held one; the server keeps the newer value.
            let remote = try PostgresRemote(url: server.url, namespace: "team")
            let old = SyncEntry(
                key: "theme", value: .string("old"),
                stamp: SyncStamp(wallMilliseconds: 1, counter: 0, replica: "elsewhere"))
            let refused = try remote.push([old])
            #expect(refused.map(\.value) == [.string("light")])
            #expect(
                try remote.pull(after: nil).entries.first { $0.key == "theme" }?.value == .string("light"))
            // Another namespace sees none of it.
            let other = try PostgresRemote(url: server.url, namespace: "other")
            #expect(try other.pull(after: nil).entries.isEmpty)
        }

        /// Item 3: with the server stopped, a replica starts, reads and writes; its writes wait in
        /// the local store and reach the server when it is back.
        @Test func writesMadeWhileTheServerIsDownArriveWhenItReturns() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let b = try replica(server)
            try server.stop()
            let path = temporaryPath("offline")
            do {
                let a = try replica(server, local: try SQLiteStore(path: path))
                try a.setValue(.integer(7), forKey: "count")
                #expect(a.value(forKey: "count") == .integer(7))
                #expect {
                    try a.syncNow()
                } throws: { error in
                    (error as? StoreError)?.kind == .connectionLost
                }
                #expect(a.status.pendingKeys == ["count"])
            }
            try server.start()
            let again = try replica(server, local: try SQLiteStore(path: path))
            try again.syncNow()
            #expect(again.status.pendingKeys.isEmpty)
            try b.syncNow()
            #expect(b.value(forKey: "count") == .integer(7))
        }

        /// A push notifies the other replicas, which pull by themselves.
        @Test func aPushWakesTheOtherReplicas() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let a = try replica(server, automatically: true)
            let b = try replica(server, automatically: true)
            try a.setValue(.string("dark"), forKey: "theme")
            #expect(await eventually { b.value(forKey: "theme") == .string("dark") })
            try b.setValue(.string("light"), forKey: "theme")
            #expect(await eventually { a.value(forKey: "theme") == .string("light") })
        }

        /// Three replicas over SQLite files write and sync at random while the server stops and
        /// starts; at the end each holds, for every key, the write with the highest stamp.
        @Test func replicasConvergeThroughAServerThatGoesAway() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let replicas = try (0..<3).map { index in
                try replica(server, local: try SQLiteStore(path: temporaryPath("replica\(index)")))
            }
            var random = SeededGenerator(state: 7)
            var writes: [String: [(stamp: SyncStamp, value: PropertyListValue?)]] = [:]
            var serverUp = true
            for step in 0..<120 {
                let store = replicas[Int(random.next() % 3)]
                switch random.next() % 20 {
                case 0..<12:
                    let key = "k\(random.next() % 5)"
                    let value: PropertyListValue? = random.next() % 6 == 0 ? nil : .integer(Int64(step))
                    try store.setValue(value, forKey: key)
                    writes[key, default: []].append((try #require(store.stamp(forKey: key)), value))
                case 12..<19:
                    // Up: it syncs (a connection the restart ended is replaced). Down: the link
                    // is lost, and nothing else.
                    do { try store.syncNow() } catch let error as StoreError where !serverUp {
                        #expect(error.kind == .connectionLost)
                    }
                default:
                    if serverUp { try server.stop(mode: "immediate") } else { try server.start() }
                    serverUp.toggle()
                }
            }
            if !serverUp { try server.start() }
            for _ in 0..<2 { for store in replicas { try store.syncNow() } }
            for (key, made) in writes {
                let winner = try #require(made.max { $0.stamp < $1.stamp })
                for store in replicas {
                    #expect(store.value(forKey: key) == winner.value, "\(key)")
                    #expect(store.stamp(forKey: key) == winner.stamp)
                }
            }
        }
    }

    /// A path in a fresh temporary folder.
    private func temporaryPath(_ name: String) -> String {
        ScratchFolder.make("sync").appendingPathComponent(name + ".sqlite").path
    }

#endif
