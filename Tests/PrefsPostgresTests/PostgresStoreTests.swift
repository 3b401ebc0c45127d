#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import Observation
    import PrefsTestSupport
    import Prefs
    import PrefsSupport
    import PrefsPostgres
    import Testing

    /// Each test starts its own throwaway server (see `PostgresServer`).
    ///
    /// The suite runs its tests one at a time: each server is a few processes, and the machine has two cores.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct PostgresStoreTests {
        @Test func valuesRoundTripAndAreSharedBetweenStores() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let first = try PostgresStore(url: server.url, namespace: "checkout")
            let second = try PostgresStore(url: server.url, namespace: "checkout")
            let other = try PostgresStore(url: server.url, namespace: "billing")
            let values: [StoreKey: PropertyListValue] = [
                "limit": .integer(50), "ratio": .double(0.25), "name": .string("a\u{0}b 🌍"),
                "when": .date(Date(timeIntervalSince1970: 1_700_000_000.123_456)),
                "flags": .array([.bool(true)]),
                "nested": .dictionary(["bytes": .data(Data([0, 255]))]),
            ]
            for (key, value) in values { try first.setValue(value, forKey: key.name) }
            #expect(first.snapshot() == values)
            #expect(await eventually { second.snapshot() == values }, "another instance sees every write")
            #expect(
                try PostgresStore(url: server.url, namespace: "checkout").snapshot() == values,
                "and a new one loads them")
            #expect(other.snapshot().isEmpty, "a namespace is separate data")

            try second.setValue(nil, forKey: "limit")
            #expect(await eventually { first.value(forKey: "limit") == nil })
        }

        /// Issue "Keys the program declares", item 2: a namespace's key descriptions are kept
        /// beside its values (in `prefs_keys`), per namespace, and a newer one replaces the older.
        @Test func keyDescriptionsAreKeptPerNamespaceBesideTheValues() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let prefs = Preferences(store: try PostgresStore(url: server.url, namespace: "checkout"))
            let limit = Preferences.Key<Int>(
                "limit", default: 50, help: "Items per order", allowed: .range(1...500))
            try prefs.publish([limit])
            let other = Preferences(store: try PostgresStore(url: server.url, namespace: "checkout"))
            #expect(other.keyDescriptions()["limit"] == limit.keyDescription)
            #expect(other.storedKeys.isEmpty, "never among the values")
            let billing = Preferences(store: try PostgresStore(url: server.url, namespace: "billing"))
            #expect(billing.keyDescriptions().isEmpty)
            try other.publish([Preferences.Key<Int>("limit", default: 20)])
            #expect(prefs.keyDescriptions()["limit"]?.defaultValue == .integer(20))
        }

        @Test func aChangeReachesObserversInAnotherProcess() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let prefs = Preferences(store: try PostgresStore(url: server.url, namespace: "ns"))
            let seen = Locked<[String?]>([])
            let key = Preferences.Key<String?>("greeting")
            let observation = prefs.observe(key, initial: false) { value in seen.withLock { $0.append(value) }
            }
            let writer = try Helper.run(["pg-set", server.url, "ns", "greeting", "hello fleet"])
            #expect(writer.status == 0, "\(writer.stderr)")
            #expect(await eventually { seen.withLock { $0 } == ["hello fleet"] })
            _ = observation
        }

        /// `@Pref` on a PostgresStore: a write from another process (another machine's path)
        /// is announced to Observation once.
        @Test func aPrefPropertySeesAnotherProcessesWrite() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let prefs = Preferences(store: try PostgresStore(url: server.url, namespace: "ns"))
            let greeting = Pref(Preferences.Key<String?>("greeting"), in: prefs)
            let announced = Locked(0)
            withObservationTracking {
                _ = greeting.wrappedValue
            } onChange: {
                announced.withLock { $0 += 1 }
            }
            let writer = try Helper.run(["pg-set", server.url, "ns", "greeting", "hello fleet"])
            #expect(writer.status == 0, "\(writer.stderr)")
            #expect(await eventually { announced.withLock { $0 } == 1 })
            #expect(greeting.wrappedValue == "hello fleet")
        }

        @Test func fourProcessesWritingLoseNothing() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let writers = try (0..<4).map {
                try Helper.start(["pg-write", server.url, "ns", "p\($0)", "300"])
            }
            for writer in writers {
                let output = writer.finish()
                #expect(output.status == 0, "\(output.stderr)")
            }
            let values = try PostgresStore(url: server.url, namespace: "ns").snapshot()
            #expect(values.count == 1_200)
            #expect(values["p3.299"] == .integer(299))
        }

        @Test func fourProcessesIncrementingEndAtExactlyTheSum() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let incrementers = try (0..<4).map { _ in
                try Helper.start(["pg-increment", server.url, "ns", "count", "100"])
            }
            for incrementer in incrementers {
                #expect(incrementer.finish().status == 0)
            }
            #expect(
                try PostgresStore(url: server.url, namespace: "ns").value(forKey: "count") == .integer(400))
        }

        @Test func aServerRestartDuringWritesLosesNoAcknowledgedWrite() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let observer = try PostgresStore(url: server.url, namespace: "ns")
            let acknowledgements = server.folder.appendingPathComponent("acknowledged").path
            let child = try Helper.start(["pg-ack-writer", server.url, "ns", acknowledgements])
            // SIGKILL: the helper may have inherited a blocked SIGTERM from the test runner's thread.
            defer { child.killIfRunning() }
            func acknowledgedIndexes() -> [Int] {
                let text = (try? String(contentsOfFile: acknowledgements, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap { Int($0) }
            }
            #expect(await eventually { acknowledgedIndexes().count >= 50 })

            try server.stop()
            #expect(await eventually { observer.isStale }, "the store says its values may be stale")
            let beforeRestart = acknowledgedIndexes().count
            #expect(throws: StoreError.self) {
                try observer.setValue(.bool(true), forKey: "while-down")
            }
            try server.start()

            #expect(
                await eventually(within: 20) { acknowledgedIndexes().count >= beforeRestart + 50 },
                "the writer goes on by itself")
            _ = child.stop(SIGKILL)
            #expect(await eventually { !observer.isStale })

            let stored = try PostgresStore(url: server.url, namespace: "ns").snapshot()
            let missing = acknowledgedIndexes().filter { stored[StoreKey("k\($0)")] != .integer(Int64($0)) }
            #expect(missing.isEmpty, "acknowledged writes missing: \(missing.prefix(10))")
            #expect(stored["while-down"] == nil, "a write that threw was not made")
            // The observer's cache was re-read in full after reconnecting.
            #expect(await eventually { observer.snapshot().count == stored.count })
        }

        @Test func aWrongPasswordGivesAClearErrorWithoutThePassword() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let wrong = "Wr0ng-Pa55word"
            #expect {
                try PostgresStore(url: server.url(password: wrong), namespace: "ns")
            } throws: { error in
                let text = "\(error)"
                return (error as? StoreError)?.kind == .connectionFailed
                    && text.contains("password authentication failed") && !text.contains(wrong)
                    && !text.contains(PostgresServer.password)
            }
            let store = try PostgresStore(url: server.url, namespace: "ns")
            #expect(!store.description.contains(PostgresServer.password))
            #expect(store.description.contains("namespace: ns"))
        }

        @Test func anUnreachableServerGivesAClearError() throws {
            let url =
                "postgresql://postgres:Top-Secret-1@/postgres?host=/nonexistent-socket-folder&connect_timeout=2"
            #expect {
                try PostgresStore(url: url, namespace: "ns")
            } throws: { error in
                let text = "\(error)"
                return (error as? StoreError)?.kind == .connectionFailed
                    && text.contains("nonexistent-socket-folder")
                    && !text.contains("Top-Secret-1")
            }
        }

        @Test func theNamespaceIsDataNeverSQL() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let hostile = "x'); DROP TABLE prefs_entries; --"
            let store = try PostgresStore(url: server.url, namespace: hostile)
            try store.setValue(.string("safe"), forKey: "k")
            #expect(
                try PostgresStore(url: server.url, namespace: hostile).value(forKey: "k") == .string("safe"))
            #expect(throws: StoreError.self) {
                try PostgresStore(url: server.url, namespace: "two\nlines")
            }
        }
    }

    /// The `prefs` tool on a PostgreSQL store.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct PostgresCLITests {
        static func prefs(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let result = try Helper.run(arguments, program: "prefs")
            return (
                result.status, result.stdout.trimmingCharacters(in: .newlines),
                result.stderr.trimmingCharacters(in: .newlines)
            )
        }

        @Test func theToolReadsAndWritesNamespaces() throws {
            let server = try PostgresServer()
            defer { server.remove() }
            #expect(
                try Self.prefs(["--store", server.url, "write", "checkout", "limit", "-int", "50"]).status
                    == 0)
            #expect(
                try Self.prefs(["--store", server.url, "write", "billing", "currency", "EUR"]).status == 0)
            #expect(try Self.prefs(["--store", server.url, "read", "checkout", "limit"]).stdout == "50")
            #expect(try Self.prefs(["--store", server.url, "domains"]).stdout == "billing, checkout")
            #expect(
                try Self.prefs([
                    "--store", server.url, "--namespace", "billing", "read", "billing", "currency",
                ])
                .stdout == "EUR")
            #expect(
                try Self.prefs(["--store", server.url, "--namespace", "billing", "domains"]).stdout
                    == "billing")
            #expect(
                try PostgresStore(url: server.url, namespace: "checkout").value(forKey: "limit")
                    == .integer(50))
            #expect(try Self.prefs(["--store", server.url, "delete", "billing"]).status == 0)
            #expect(try Self.prefs(["--store", server.url, "domains"]).stdout == "checkout")

            let wrong = try Self.prefs(["--store", server.url(password: "Not-The-One"), "read", "checkout"])
            #expect(wrong.status == 74)
            #expect(
                wrong.stderr.contains("password authentication failed")
                    && !wrong.stderr.contains("Not-The-One"))
        }
    }
#endif
