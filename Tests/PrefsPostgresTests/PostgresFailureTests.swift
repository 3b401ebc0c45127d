#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Prefs
    import PrefsSupport
    import Testing

    @testable import PrefsPostgres

    /// Issue "Nothing lost, nothing hung", item 11: no connection string shows its secret.
    ///
    /// Not in the store's description, not in any error. Every secret here contains `Zq7`.
    @Suite struct PostgresSecretTests {
        static let forms = [
            "host=/nonexistent-socket-folder dbname=postgres user=postgres password=Zq7-plain connect_timeout=1",
            "host=/nonexistent-socket-folder user=postgres password='Zq7 with \\' quote' connect_timeout=1",
            "host=/nonexistent-socket-folder sslpassword=Zq7-ssl connect_timeout=1",
            "postgresql://postgres:Pa#ss-Zq7@/postgres?host=/nonexistent-socket-folder",
            "postgresql://postgres:Pa%23ss%20Zq7%2F@/postgres?host=/nonexistent-socket-folder",
            "postgresql:///postgres?host=/nonexistent-socket-folder&password=Zq7-query",
            "postgresql:///postgres?host=/nonexistent-socket-folder&sslpassword=Zq7-sslquery",
            // Strings libpq cannot parse, whose error message quotes the bad token: the password.
            "postgresql://postgres:se%zzZq7cret@/postgres?host=/nonexistent-socket-folder",
            "postgresql://postgres:Zq7%@/postgres?host=/nonexistent-socket-folder",
            "postgresql:///postgres?host=/nonexistent-socket-folder&password=Zq7%zz",
            "postgresql:///postgres?host=/nonexistent-socket-folder&sslpassword=%GZq7",
            "host=/nonexistent-socket-folder password='Zq7 unterminated",
            "host=/nonexistent-socket-folder password=Zq7 bogus=\"x\"",
        ]

        @Test(arguments: forms)
        func noFormShowsTheSecret(url: String) throws {
            #expect {
                try PostgresStore(url: url, namespace: "ns")
            } throws: { error in
                let text = "\(error)"
                return (error as? StoreError)?.kind == .connectionFailed && !text.contains("Zq7")
            }
            #expect {
                try PostgresStore.namespaces(url: url)
            } throws: { error in
                !"\(error)".contains("Zq7")
            }
        }

        /// Item 12: a namespace that cannot travel in a notification, or holds NUL, is refused up
        /// front with a typed error naming the limit (no server needed: nothing is sent).
        @Test(arguments: ["", "a\u{0}b", "two\nlines", String(repeating: "n", count: 1_001)])
        func badNamespacesAreRefusedUpFront(namespace: String) throws {
            #expect {
                try PostgresStore(
                    url: "postgresql:///postgres?host=/nonexistent-socket-folder", namespace: namespace)
            } throws: { error in
                (error as? StoreError)?.kind == .invalidNamespace && "\(error)".contains("1000 bytes")
            }
        }
    }

    /// Issue "Nothing lost, nothing hung": the PostgreSQL items that need a server.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct PostgresFailureTests {
        /// Item 11: a working store's description has no password, whatever the form.
        @Test func aKeyValueConnectionStringIsDescribedWithoutItsPassword() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let conninfo =
                "host=\(server.socketFolder.path) dbname=postgres user=postgres password=\(PostgresServer.password)"
            let store = try PostgresStore(url: conninfo, namespace: "ns")
            #expect(!store.description.contains(PostgresServer.password), "\(store.description)")
            #expect(store.description.contains("dbname=postgres"))
            try store.setValue(.integer(1), forKey: "k")
        }

        /// Item 12: keys PostgreSQL cannot hold are refused with a typed error; the store goes on.
        @Test func badKeysAreRefusedWithATypedError() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let store = try PostgresStore(url: server.url, namespace: "ns")
            for key in ["a\u{0}b", String(repeating: "k", count: PostgresStore.maximumKeyBytes + 1)] {
                #expect {
                    try store.setValue(.integer(1), forKey: key)
                } throws: { error in
                    (error as? StoreError)?.kind == .invalidKey
                }
            }
            let longest = String(repeating: "k", count: PostgresStore.maximumKeyBytes)
            try store.setValue(.integer(2), forKey: longest)
            #expect(try PostgresStore(url: server.url, namespace: "ns").value(forKey: longest) == .integer(2))
        }

        /// Item 8: a parameter over 2 GiB is refused before libpq's `Int32` lengths.
        @Test func aValueOverTwoGigabytesIsTooLarge() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let connection = try PostgresConnection(url: server.url, redact: { $0 })
            #expect {
                try connection.run("SELECT length($1)", [.bytes(Data(count: Int(Int32.max) + 1))])
            } throws: { error in
                (error as? PostgresConnection.Failure)?.tooLarge == true
            }
            #expect(try connection.run("SELECT 1").count == 1)
        }

        /// Item 2: two spellings of one key to Swift are two keys to PostgreSQL, and to the store.
        @Test func twoSpellingsAreTwoKeys() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let store = try PostgresStore(url: server.url, namespace: "ns")
            let other = try PostgresStore(url: server.url, namespace: "ns")
            try store.setValue(.integer(1), forKey: "caf\u{E9}")
            try store.setValue(.integer(2), forKey: "cafe\u{301}")
            #expect(store.snapshot().count == 2)
            #expect(await eventually { other.snapshot().count == 2 })
            try other.setValue(nil, forKey: "cafe\u{301}")
            #expect(await eventually { store.snapshot() == [StoreKey("caf\u{E9}"): .integer(1)] })
        }

        /// Item 4: a row this release cannot decode is reported, not taken for a removal; it is
        /// reported to the store's diagnostics, never written to stderr by the library itself.
        @Test func anUndecodableRowIsNotARemoval() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let reported = Locked<[PreferenceIssue]>([])
            let store = try PostgresStore(
                url: server.url, namespace: "ns",
                diagnostics: PreferenceDiagnostics { issue in reported.withLock { $0.append(issue) } })
            try store.setValue(.string("good"), forKey: "k")
            let seen = Locked<[StoreChange]>([])
            let observation = store.observe { change in seen.withLock { $0.append(change) } }
            let raw = try PostgresConnection(url: server.url, redact: { $0 })
            try raw.run(
                "UPDATE prefs_entries SET value = '\\xff00'::bytea, seq = nextval('prefs_seq') WHERE key = 'k'"
            )
            // A notification on the namespace's own channel that carries no rows: the store
            // reads the rows after its last one, the undecodable one among them.
            try raw.run("SELECT pg_notify('\(PostgresNotification.channel(for: "ns"))', 'no rows')")
            let marker = try PostgresStore(url: server.url, namespace: "ns")
            try marker.setValue(.bool(true), forKey: "marker")
            #expect(await eventually { store.value(forKey: "marker") == .bool(true) })
            #expect(seen.withLock { $0.allSatisfy { $0.values[StoreKey("k")] == nil } })
            #expect(store.value(forKey: "k") == .string("good"))
            #expect(
                reported.withLock { $0 }.contains { "\($0)".contains("cannot decode the values of [\"k\"]") },
                "\(reported.withLock { $0 })")
            observation.cancel()
        }

        /// Item 13: two writers racing on one key in one process: every store's cache ends at the
        /// server's value, whichever of a write's commit and another's notification lands first.
        @Test func racingWritersLeaveEveryCacheAtTheServersValue() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let first = try PostgresStore(url: server.url, namespace: "ns")
            let second = try PostgresStore(url: server.url, namespace: "ns")
            let done = DispatchGroup()
            for (store, parity) in [(first, 0), (second, 1)] {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    for index in 0..<200 {
                        try? store.setValue(.integer(Int64(index * 2 + parity)), forKey: "k")
                    }
                }
            }
            done.wait()
            let final = try PostgresStore(url: server.url, namespace: "ns").value(forKey: "k")
            #expect(final != nil)
            #expect(
                await eventually { first.value(forKey: "k") == final && second.value(forKey: "k") == final })
        }

        /// Item 13: observers hear writes in the server's commit order across keys too: one
        /// store's own writes and another's, alternating, arrive alternating.
        @Test func observersHearWritesInCommitOrder() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let mine = try PostgresStore(url: server.url, namespace: "ns")
            let theirs = try PostgresStore(url: server.url, namespace: "ns")
            let heard = Locked<[String]>([])
            let observation = mine.observe { change in
                for (key, value) in change.values.sorted(by: { $0.key < $1.key }) {
                    if case .set(.integer(let number)) = value {
                        heard.withLock { $0.append("\(key)\(number)") }
                    }
                }
            }
            var expected: [String] = []
            for round in 1...30 {
                try mine.setValue(.integer(Int64(round)), forKey: "a")
                try theirs.setValue(.integer(Int64(round)), forKey: "b")
                expected += ["a\(round)", "b\(round)"]
            }
            #expect(await eventually { heard.withLock { $0.count } >= expected.count })
            #expect(heard.withLock { $0 } == expected)
            observation.cancel()
        }

        /// Item 13: a table written by the first release is upgraded in place, its values kept.
        @Test func aVersionOneTableIsUpgraded() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let raw = try PostgresConnection(url: server.url, redact: { $0 })
            try raw.run(
                """
                CREATE TABLE prefs_entries (namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL,
                    PRIMARY KEY (namespace, key))
                """)
            try raw.run("CREATE TABLE prefs_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            try raw.run("INSERT INTO prefs_meta VALUES ('schema_version', '1')")
            try raw.run(
                "INSERT INTO prefs_entries VALUES ('ns', 'old', $1)",
                [.bytes(PropertyListValue.integer(7).storedEncoding())])
            let store = try PostgresStore(url: server.url, namespace: "ns")
            #expect(store.value(forKey: "old") == .integer(7))
            try store.setValue(nil, forKey: "old")
            try store.setValue(.integer(8), forKey: "new")
            #expect(
                try PostgresStore(url: server.url, namespace: "ns").snapshot() == [
                    StoreKey("new"): .integer(8)
                ])
        }
    }
#endif
