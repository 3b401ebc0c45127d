#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsSupport
    import PrefsTestSupport
    import Prefs
    import Testing

    @testable import PrefsPostgres

    /// A push tells the listening replicas what it wrote, so that their pulls ask the server
    /// nothing: with many replicas, the server's work per write would otherwise grow with a query
    /// from each.
    @Suite(.timeLimit(.minutes(10))) struct SyncDeliveriesTests {
        private func entry(_ key: String, _ value: PropertyListValue?, _ wall: UInt64) -> SyncEntry {
            SyncEntry(
                key: key, value: value, stamp: SyncStamp(wallMilliseconds: wall, counter: 3, replica: "r:1"))
        }

        @Test func aPushTravelsWhole() {
            let push = SyncPush(
                namespace: "team:1", previous: 41, last: 44,
                entries: [
                    entry("theme", .string("dark"), 1), entry("gone", nil, 2),
                    entry("12:ключ", .dictionary(["a": .array([.integer(-1), .double(0.5)])]), 3),
                ])
            #expect(SyncPush(payload: push.payload) == push)
        }

        @Test func aPushTooLargeForANotificationIsToldWithoutItsEntries() {
            let push = SyncPush(
                namespace: "team", previous: 1, last: 2,
                entries: [entry("big", .data(Data(repeating: 7, count: 5_000)), 1)])
            #expect(push.payload.utf8.count < SyncPush.maximumPayloadBytes)
            let heard = SyncPush(payload: push.payload)
            #expect(heard?.entries == nil && heard?.last == 2)
        }

        /// Damaged or hostile text is not a push (every cut of a good one, bytes changed at
        /// random), and never crashes the listener.
        @Test func damagedPayloadsAreNotPushes() {
            let good = SyncPush(
                namespace: "team", previous: 5, last: 9,
                entries: [entry("theme", .string("dark"), 1), entry("size", .integer(12), 2)]
            ).payload
            let bytes = Array(good.utf8)
            for cut in 0..<bytes.count {
                let text = String(decoding: bytes[0..<cut], as: UTF8.self)
                if let push = SyncPush(payload: text) { #expect(push.entries?.count ?? 0 < 2) }
            }
            var random = SeededGenerator(state: 11)
            for _ in 0..<2_000 {
                var changed = bytes
                changed[Int(random.next() % UInt64(changed.count))] = UInt8(truncatingIfNeeded: random.next())
                _ = SyncPush(payload: String(decoding: changed, as: UTF8.self))
            }
            #expect(SyncPush(payload: "team") == nil, "a namespace alone")
            #expect(SyncPush(payload: "4:team1:91:5") == nil, "numbers going back")
            #expect(SyncPush(payload: "4:team2:102:10") == nil, "a push that wrote nothing is never told")
        }

        /// A push to another namespace is not this one's, even one equal to it in Swift's eyes
        /// (canonically equivalent): the server compares namespaces byte by byte.
        @Test func pushesAreHeardForTheirNamespaceByItsBytes() throws {
            let composed = "caf\u{E9}"  // é as one scalar
            let decomposed = "cafe\u{301}"  // e and a combining accent
            #expect(composed == decomposed, "equal to Swift")
            let remote = try PostgresRemote(
                url: "postgresql://nobody@/none?host=/nonexistent", namespace: composed)
            let elsewhere = SyncPush(
                namespace: decomposed, previous: 0, last: 5, entries: [entry("theme", .string("dark"), 1)])
            #expect(!remote.hear([elsewhere.payload]))
            #expect(throws: StoreError.self, "nothing heard: the server is asked") {
                try remote.pullHeard(after: .integer(0))
            }
            let ours = SyncPush(
                namespace: composed, previous: 0, last: 5, entries: [entry("theme", .string("light"), 1)])
            #expect(remote.hear([ours.payload]))
            #expect(try remote.pullHeard(after: .integer(0)).entries.map(\.value) == [.string("light")])
        }

        /// Pushes heard answer a pull only when they link up from its cursor to the newest heard.
        @Test func heardPushesAnswerOnlyWhenTheyLinkUp() {
            var heard = HeardPushes()
            #expect(heard.entries(after: 0) == nil, "nothing heard: ask the server")
            heard.add(SyncPush(namespace: "t", previous: 3, last: 5, entries: [entry("a", .integer(1), 1)]))
            heard.add(SyncPush(namespace: "t", previous: 5, last: 8, entries: [entry("b", .integer(2), 2)]))
            var copy = heard
            #expect(copy.entries(after: 3)?.entries.map(\.key) == ["a", "b"])
            #expect(heard.entries(after: 5)?.cursor == 8)
            #expect(heard.entries(after: 8)?.entries == [])
            #expect(heard.entries(after: 2) == nil, "rows 3 and before were not heard")
            heard.add(SyncPush(namespace: "t", previous: 9, last: 10, entries: [entry("c", .integer(3), 3)]))
            #expect(heard.entries(after: 8) == nil, "row 9 is missing: ask the server")
            heard.add(SyncPush(namespace: "t", previous: 10, last: 12, entries: nil))
            #expect(heard.entries(after: 10) == nil, "a push told without its entries")
        }

        /// Against a server: a replica that heard a push pulls it without a statement (its one
        /// connection's last statement stays its `LISTEN`); one told without its entries is asked
        /// of the server.
        @Test(.enabled(if: PostgresServer.isAvailable)) func aPullAfterAHeardPushAsksNothingOfTheServer()
            async throws
        {
            let server = try PostgresServer()
            defer { server.remove() }
            let writer = try PostgresRemote(url: server.url, namespace: "team")
            let cursor = try writer.pull(after: nil).cursor
            let reader = try PostgresRemote(url: server.url, namespace: "team")
            let hints = Locked(0)
            let observation = reader.observe { _ in hints.withLock { $0 += 1 } }
            defer { observation.cancel() }
            #expect(await eventually { hints.withLock { $0 } == 1 }, "listening")
            // The LISTEN, or the listener's own probe after a quiet while (a loaded machine takes
            // more than its 10 s to get here): neither is a pull.
            let listening = "query IN ('LISTEN prefs_sync', '\(PostgresConnection.livenessProbe)')"
            #expect(
                await eventually { (try? server.clientConnections()) == 2 },
                "the writer's, the reader's (statements and listening)")

            _ = try writer.push([entry("theme", .string("dark"), 1), entry("gone", nil, 2)])
            #expect(await eventually { hints.withLock { $0 } == 2 })
            let (entries, next) = try reader.pullHeard(after: cursor)
            #expect(entries.map(\.key).sorted() == ["gone", "theme"])
            #expect(entries.first { $0.key == "theme" }?.value == .string("dark"))
            #expect(try server.clientConnections(where: listening) == 1, "nothing asked since the LISTEN")

            _ = try writer.push([entry("big", .data(Data(repeating: 7, count: 5_000)), 3)])
            #expect(await eventually { hints.withLock { $0 } == 3 })
            #expect(try reader.pullHeard(after: next).entries.map(\.key) == ["big"])
            #expect(try server.clientConnections(where: listening) == 0, "asked the server")
            // Eventually: the backend of the count before may still be ending.
            #expect(await eventually { (try? server.clientConnections()) == 2 }, "on the same connection")
        }
    }
#endif
