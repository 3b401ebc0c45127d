#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// Settings shared by a fleet of processes and machines, kept in PostgreSQL.
    ///
    /// ```swift
    /// import PrefsPostgres
    /// let store = try PostgresStore(url: "postgresql://app@db.internal/app?sslmode=verify-full", namespace: "checkout")
    /// let prefs = Preferences(store: store)
    /// prefs[.maxItems] = 50        // committed, and announced to every other instance
    /// ```
    ///
    /// - **Data.** One table, `prefs_entries(namespace, key, value, seq)`, created if missing, with a
    ///   schema version in `prefs_meta`. The namespace is a column value, never part of SQL; every
    ///   statement binds its parameters. Values use the same stored encoding as `SQLiteStore`. Each
    ///   write carries a sequence number that grows in commit order, and a removal is kept as a row
    ///   without a value, so instances catch up by sequence number.
    /// - **Reads** come from a local cache of the namespace. Other instances' writes arrive by
    ///   `LISTEN`/`NOTIFY` on the namespace's own channel, carrying the write when it fits (see
    ///   `PostgresNotification`), on loopback in milliseconds, and reach `changes(of:)` and `observe`; a
    ///   cached value is only ever replaced by a newer commit, so each key's values reach observers
    ///   in commit order.
    /// - **Connections.** Every store of a process on one server shares one listening connection
    ///   and one writing connection (opened by the first write): see `PostgresHub`.
    /// - **Writes** are committed before they return. `update` runs in one transaction that holds a
    ///   per-namespace advisory lock and reads from the database, so it is atomic across every
    ///   process and machine on the namespace.
    /// - **A lost server.** Writes throw ``StoreError`` while the server is away (never
    ///   silently dropped); the store reconnects by itself, with back-off. Reads keep serving the
    ///   last known values, and ``isStale`` says so. After a reconnection the store reads every row
    ///   written since the last one it saw, since `NOTIFY` does not replay what was missed.
    /// - **Secrets.** Passwords (`password`, `sslpassword`, in a URL or a `key=value` string) never
    ///   appear in errors or descriptions: libpq's own parser finds them. TLS settings (`sslmode`,
    ///   `sslrootcert` …) go to libpq untouched.
    /// - **Limits.** A namespace is at most ``maximumNamespaceBytes`` bytes of UTF-8 and a key at most
    ///   ``maximumKeyBytes``, neither with a NUL character; others are refused with a typed error.
    public final class PostgresStore: PreferenceStore {
        /// The namespace: the settings this store sees (other namespaces share the table, not the values).
        package let namespace: String
        /// `PostgresStore(CONNECTION WITHOUT SECRETS, namespace: NAME)`.
        public let description: String

        /// The longest namespace, in bytes of UTF-8: it travels in `NOTIFY` payloads (under 8,000
        /// bytes) and in the table's index.
        package static let maximumNamespaceBytes = 1_000
        /// The longest key, in bytes of UTF-8: PostgreSQL's index holds about 2,700 bytes per entry.
        package static let maximumKeyBytes = 1_500

        let shared: Shared
        let hub: PostgresHub
        /// Held for each transaction of this store: a write to it from inside its own transaction
        /// stops with a message rather than waiting for itself.
        private let writer: TransactionLock<Void>

        /// Connects, creates (or upgrades) the table if needed, loads the namespace, and starts
        /// listening.
        ///
        /// ```swift
        /// let store = try PostgresStore(url: "postgresql://localhost/app", namespace: "checkout")
        /// ```
        ///
        /// What the store notices on its own (a stored value this release cannot decode, which it
        /// ignores) goes to `diagnostics`, as with the other stores: stderr, once per key, unless
        /// the program gives its own handler.
        public init(url: String, namespace: String, diagnostics: PreferenceDiagnostics = .shared)
            throws
        {
            let secrets: ConnectionSecrets
            do {
                secrets = try ConnectionSecrets(url)
            } catch let failure as PostgresConnection.Failure {
                throw StoreError(
                    kind: .connectionFailed, store: "PostgresStore", message: failure.message)
            }
            let description = "PostgresStore(\(secrets.safeDescription), namespace: \(namespace))"
            try checkNamespace(namespace, allowingLineBreaks: false, store: description)
            self.namespace = namespace
            self.description = description
            shared = Shared(namespace: namespace, description: description, diagnostics: diagnostics)
            writer = TransactionLock((), store: description, timeout: .seconds(30))
            // Every store of this process on the server shares one listening and one writing
            // connection (see `PostgresHub`).
            hub = PostgresHub.acquire(url: url, secrets: secrets)
            do {
                try hub.join(shared)
            } catch {
                hub.release()
                let message = (error as? PostgresConnection.Failure)?.message ?? "\(error)"
                throw StoreError(kind: .connectionFailed, store: description, message: message)
            }
        }

        deinit {
            hub.leave(shared)
            hub.release()
        }

        /// True while the store has lost its server: reads then serve the last known values, which
        /// other instances may have changed since.
        public var isStale: Bool { shared.stale.withLock { $0 } }

        /// The number of live observations of this store.
        package var observerCount: Int { shared.observers.count }

        /// The cached value.
        public func value(forKey key: String) -> PropertyListValue? {
            shared.cache.withLock { $0.values[StoreKey(key)] }
        }

        /// Every cached key and value.
        public func snapshot() -> [StoreKey: PropertyListValue] {
            shared.cache.withLock { $0.values }
        }

        /// Every cached key.
        package func keys() -> [String] {
            shared.cache.withLock { $0.values.keys.map(\.name) }
        }

        /// Runs `body` in one transaction holding the namespace's advisory lock, after catching up
        /// with every earlier commit: atomic across every process and machine on the namespace.
        ///
        /// A write to this store from inside `body` (other than through its transaction) stops the
        /// program with a message: it would wait for itself.
        public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
            if writer.isHeldByCurrentThread || hub.writer.isHeldByCurrentThread {
                // Inside a transaction's body on this thread. On this very store, `withLock`
                // stops with a message (the transaction would wait for itself); on another
                // store of the server, the shared connection is taken until that body
                // returns, so this transaction runs on a connection of its own.
                return try writer.withLock(during: "a transaction") { _ in
                    let connection: PostgresConnection
                    do {
                        connection = try PostgresConnection(url: hub.url, redact: hub.secrets.redact)
                    } catch let failure as PostgresConnection.Failure {
                        throw StoreError(
                            kind: .connectionLost, store: description, message: failure.message)
                    }
                    return try run(body, on: connection)
                }
            }
            return try hub.writer.withLock(during: "a transaction on \(description)") { state in
                try writer.withLock(during: "a transaction") { _ in
                    let connection = try hub.connectedWriter(&state, store: description)
                    do {
                        return try run(body, on: connection)
                    } catch let error as StoreError where error.kind == .connectionLost {
                        state.connection = nil
                        throw error
                    }
                }
            }
        }

        /// Calls `handler` with every change, from this process or any other instance on the
        /// namespace, until the observation ends.
        public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
            shared.observers.add(handler)
        }

        // MARK: - Writing

        /// Runs the transaction on `connection`, rolling it back on any failure.
        private func run<Result>(
            _ body: (inout StoreTransaction) throws -> Result, on connection: PostgresConnection
        ) throws -> Result {
            do {
                return try write(on: connection, body)
            } catch let failure as PostgresConnection.Failure {
                _ = try? connection.run("ROLLBACK")
                throw StoreError(
                    kind: failure.tooLarge ? .tooLarge : failure.connectionLost ? .connectionLost : .server,
                    store: description, message: failure.message)
            } catch {
                _ = try? connection.run("ROLLBACK")
                throw error
            }
        }

        private func write<Result>(
            on connection: PostgresConnection, _ body: (inout StoreTransaction) throws -> Result
        ) throws -> Result {
            try connection.run("BEGIN")
            try connection.run(
                "SELECT pg_advisory_xact_lock(hashtext($1))", [.text(namespace)], prepared: true)
            // Holding the namespace's lock, nobody else commits to it: after catching up, the cache
            // is exactly the namespace, and the transaction reads it.
            try shared.catchUp(using: connection)
            let cache = shared.cache
            var transaction = StoreTransaction(
                read: { key in cache.withLock { $0.values[StoreKey(key)] } },
                keys: { cache.withLock { $0.values.keys.map(\.name) } })
            let result = try body(&transaction)
            try PropertyListValue.checkStorable(transaction.writes, store: description)
            let writes = transaction.writes.mapValues(\.newValue)
            guard !writes.isEmpty else {
                try connection.run("COMMIT")
                return result
            }
            for key in writes.keys { try validate(key) }
            // Taken under the namespace's lock, so sequence numbers grow in commit order.
            guard
                let seq = try firstCell(connection.run("SELECT nextval('prefs_seq')", prepared: true))
                    .flatMap(int64)
            else {
                throw PostgresConnection.Failure(message: "nextval returned no number", connectionLost: false)
            }
            for (key, value) in writes {
                try connection.run(
                    """
                    INSERT INTO prefs_entries(namespace, key, value, seq) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, seq = excluded.seq
                    """,
                    [
                        .text(namespace), .text(key.name), value.map { .bytes($0.storedEncoding()) } ?? .null,
                        .int64(seq),
                    ], prepared: true)
            }
            // Delivered to the namespace's listeners when the transaction commits, with the rows
            // when they fit (listeners then make no query), else asking them to read the rows.
            try connection.run(
                "SELECT pg_notify($1, $2)",
                [
                    .text(shared.channel),
                    .text(PostgresNotification.payload(namespace: namespace, seq: seq, rows: writes)),
                ], prepared: true)
            shared.beginLocalCommit(seq)
            defer { shared.endLocalCommit() }
            try connection.run("COMMIT")
            shared.apply(writes.map { EntryRow(key: $0.key, value: $0.value, seq: seq) })
            return result
        }

        private func validate(_ key: StoreKey) throws {
            guard !key.name.utf8.contains(0), key.name.utf8.count <= Self.maximumKeyBytes else {
                throw StoreError(
                    kind: .invalidKey, store: description,
                    message:
                        "the key \(String(reflecting: String(key.name.prefix(40)))) cannot be stored: a key is at most \(Self.maximumKeyBytes) bytes of UTF-8 (this one has \(key.name.utf8.count)), without NUL characters"
                )
            }
        }

        /// Every namespace that holds at least one value in the database at `url`.
        ///
        /// ```swift
        /// try PostgresStore.namespaces(url: "postgresql://localhost/app")  // ["billing", "checkout"]
        /// ```
        package static func namespaces(url: String) throws -> [String] {
            var store = "PostgresStore"
            do {
                let secrets = try ConnectionSecrets(url)
                store = "PostgresStore(\(secrets.safeDescription))"
                let connection = try PostgresConnection(url: url, redact: secrets.redact)
                try Schema.prepare(connection)
                return try connection.run(
                    "SELECT DISTINCT namespace FROM prefs_entries WHERE value IS NOT NULL ORDER BY 1"
                ).compactMap { row in
                    row.first.flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
                }
            } catch let failure as PostgresConnection.Failure {
                throw StoreError(kind: .connectionFailed, store: store, message: failure.message)
            }
        }
    }

    extension PostgresStore: PrefsOwnStore {}
#endif
