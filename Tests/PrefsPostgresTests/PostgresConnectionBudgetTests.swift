#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Prefs
    import PrefsSupport
    import Testing

    @testable import PrefsPostgres

    /// Issue "PostgresStore at fleet scale", item 1: every store of a process on one server shares
    /// one listening connection and one writing connection.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct PostgresConnectionBudgetTests {
        /// The client connections the server has, not counting the one asking (each test has its
        /// own server, so they are all this process's).
        private func clientConnections(_ server: PostgresServer) throws -> Int {
            try server.clientConnections()
        }

        @Test func manyStoresOnOneServerHoldTwoConnections() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let namespaces = ["a", "b", "c", "d", "e"]
            var stores: [PostgresStore] = []
            for namespace in namespaces {
                stores.append(try PostgresStore(url: server.url, namespace: namespace))
                stores.append(try PostgresStore(url: server.url, namespace: namespace))
            }
            let seen = Locked<[String: Int]>([:])
            let observations = stores.enumerated().map { index, store in
                store.observe { change in
                    if change.values["n"] != nil { seen.withLock { $0["\(index)", default: 0] += 1 } }
                }
            }
            #expect(
                try clientConnections(server) == 1,
                "reading and observing take the listening connection alone")
            // Each namespace written by its first store: its second store (same process, same
            // connections) and only it hears the change.
            for (index, store) in stores.enumerated() where index % 2 == 0 {
                try store.setValue(.integer(Int64(index)), forKey: "n")
            }
            for (index, store) in stores.enumerated() where index % 2 == 1 {
                #expect(await eventually { store.value(forKey: "n") == .integer(Int64(index - 1)) })
            }
            #expect(
                try clientConnections(server) == 2, "one listening and one writing connection for ten stores")
            // An `update` on one store whose body writes another store of the server runs the
            // inner write on a connection of its own (the shared one is in use by this thread).
            try stores[0].transaction { t in
                t["outer"] = .bool(true)
                try stores[2].setValue(.bool(true), forKey: "inner")
            }
            #expect(stores[0].value(forKey: "outer") == .bool(true))
            #expect(stores[2].value(forKey: "inner") == .bool(true))
            #expect(await eventually { stores[3].value(forKey: "inner") == .bool(true) })
            #expect(try clientConnections(server) == 2, "the inner transaction's connection is closed")
            for observation in observations { observation.cancel() }
            stores.removeAll()
            #expect(await eventually { (try? clientConnections(server)) == 0 }, "the last store closes both")
        }

        /// A store that joins after others are listening catches up once, and a namespace whose
        /// last store went stops being listened to (its writes reach nobody here).
        @Test func storesJoinAndLeaveAListeningHub() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let first = try PostgresStore(url: server.url, namespace: "first")
            #expect(await eventually { first.shared.activity.withLock { $0.catchUps } == 1 })
            let writer = try PostgresStore(url: server.url, namespace: "second")
            try writer.setValue(.integer(1), forKey: "k")
            var late: PostgresStore? = try PostgresStore(url: server.url, namespace: "second")
            #expect(await eventually { late?.shared.activity.withLock { $0.catchUps } == 1 })
            #expect(late?.value(forKey: "k") == .integer(1))
            try writer.setValue(.integer(2), forKey: "k")
            #expect(await eventually { late?.value(forKey: "k") == .integer(2) })
            #expect(first.shared.activity.withLock { $0.notifications } == 0, "another namespace's writes")
            #expect(first.shared.activity.withLock { $0.catchUps } == 1)
            late = nil
            try writer.setValue(.integer(3), forKey: "k")
            #expect(try clientConnections(server) == 2)
        }
    }
#endif
