#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Prefs
    import Testing

    @testable import PrefsPostgres

    /// The notification format: the write itself when it fits, a request to read it otherwise.
    @Suite struct PostgresNotificationFormatTests {
        @Test func aWriteTravelsInItsNotification() throws {
            let rows: [StoreKey: PropertyListValue?] = [
                "limit": .integer(50), "gone": nil, "caf\u{E9}": .string("x"),
            ]
            let payload = PostgresNotification.payload(namespace: "checkout", seq: 42, rows: rows)
            guard case .rows(let namespace, let parsed) = PostgresNotification.parse(payload) else {
                throw TestFailure("not parsed: \(payload)")
            }
            #expect(namespace == "checkout")
            #expect(Set(parsed.map(\.seq)) == [42])
            #expect(Dictionary(uniqueKeysWithValues: parsed.map { ($0.key, $0.value) }) == rows)
        }

        /// A write to a namespace spelled with other bytes is another namespace's, though Swift
        /// finds the two names equal: the server tells them apart (their channels differ too, so
        /// only a collision of channel names brings one to the other's listener).
        @Test(.enabled(if: PostgresServer.isAvailable)) func aNamespaceIsItsBytes() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let connection = try PostgresConnection(url: server.url, redact: { $0 })
            let composed = Shared(
                namespace: "caf\u{E9}", description: "test", diagnostics: PreferenceDiagnostics { _ in })
            let payload = PostgresNotification.payload(
                namespace: "cafe\u{301}", seq: 1, rows: ["theme": .string("x")])
            try composed.receive([payload], using: connection)
            #expect(composed.cache.withLock { $0.values }.isEmpty)
            let own = PostgresNotification.payload(
                namespace: "caf\u{E9}", seq: 2, rows: ["theme": .string("y")])
            try composed.receive([own], using: connection)
            #expect(composed.cache.withLock { $0.values[StoreKey("theme")] } == .string("y"))
        }

        @Test func aWriteTooLargeForNotifyAsksListenersToReadIt() {
            let big: [StoreKey: PropertyListValue?] = ["big": .data(Data(count: 8_000))]
            let payload = PostgresNotification.payload(namespace: "ns", seq: 1, rows: big)
            #expect(payload.utf8.count <= PostgresNotification.maximumPayload)
            #expect(PostgresNotification.parse(payload) == .readRows(namespace: "ns"))
        }

        @Test func channelsAreHexNamesPerNamespace() {
            let channel = PostgresNotification.channel(for: "x'); DROP TABLE prefs_entries; --")
            #expect(channel.hasPrefix("prefs_") && channel.dropFirst(6).allSatisfy(\.isHexDigit))
            #expect(channel.count == 22)
            #expect(PostgresNotification.channel(for: "a") != PostgresNotification.channel(for: "b"))
            #expect(PostgresNotification.parse("nonsense") == nil)
        }
    }

    /// Issue "PostgresStore at fleet scale", items 2, 3 and 5: listeners apply what notifications
    /// carry without a query, wake only for their own namespace, and never move a key backwards.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct PostgresNotificationTests {
        @Test func listenersApplyNotifiedWritesWithoutQueries() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let listener = try PostgresStore(url: server.url, namespace: "ns")
            let writer = try PostgresStore(url: server.url, namespace: "ns")
            // The listener's one catch-up once LISTEN is in place.
            #expect(await eventually { listener.shared.activity.withLock { $0.catchUps } == 1 })
            for index in 0..<20 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index % 5)") }
            try writer.setValue(nil, forKey: "k0")
            #expect(await eventually { listener.snapshot() == writer.snapshot() })
            #expect(listener.snapshot().count == 4)
            #expect(listener.shared.activity.withLock { $0.catchUps } == 1, "no query after the first")
            #expect(listener.shared.activity.withLock { $0.notifications } >= 1)
        }

        @Test func aWriteTooLargeForItsNotificationIsRead() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let listener = try PostgresStore(url: server.url, namespace: "ns")
            let writer = try PostgresStore(url: server.url, namespace: "ns")
            #expect(await eventually { listener.shared.activity.withLock { $0.catchUps } == 1 })
            let big = PropertyListValue.data(Data((0..<20_000).map { UInt8($0 % 251) }))
            try writer.setValue(big, forKey: "big")
            #expect(await eventually { listener.value(forKey: "big") == big })
            #expect(listener.shared.activity.withLock { $0.catchUps } >= 2)
        }

        @Test func otherNamespacesDoNotWakeAListener() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let listener = try PostgresStore(url: server.url, namespace: "quiet")
            let other = try PostgresStore(url: server.url, namespace: "busy")
            let marker = try PostgresStore(url: server.url, namespace: "quiet")
            #expect(await eventually { listener.shared.activity.withLock { $0.catchUps } == 1 })
            for index in 0..<20 { try other.setValue(.integer(Int64(index)), forKey: "k") }
            try marker.setValue(.bool(true), forKey: "marker")
            #expect(await eventually { listener.value(forKey: "marker") == .bool(true) })
            #expect(
                listener.shared.activity.withLock { $0.notifications } == 1, "only its own namespace's write")
        }
    }
#endif
