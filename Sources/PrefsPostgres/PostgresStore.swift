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
/// - **Data.** One table, `prefs_entries(namespace, key, value)`, created if missing, with a schema
///   version in `prefs_meta`. The namespace is a column value, never part of SQL; every statement
///   binds its parameters. Values use the same binary encoding as `SQLiteStore`.
/// - **Reads** come from a local cache of the namespace. Other instances' writes arrive by
///   `LISTEN`/`NOTIFY` (on loopback, in milliseconds) and reach `changes(of:)` and `observe`.
/// - **Writes** are committed before they return. `update` runs in one transaction that holds a
///   per-namespace advisory lock and reads from the database, so it is atomic across every
///   process and machine on the namespace.
/// - **A lost server.** Writes throw ``PostgresStoreError`` while the server is away (never
///   silently dropped); the store reconnects by itself, with back-off. Reads keep serving the
///   last known values, and ``isStale`` says so. After a reconnection the cache is re-read in
///   full, since `NOTIFY` does not replay what was missed.
/// - **Secrets.** The password in the URL never appears in errors or descriptions. TLS settings
///   in the URL (`sslmode`, `sslrootcert` …) go to libpq untouched.
public final class PostgresStore: PreferenceStore {
    /// The namespace: the settings this store sees (other namespaces share the table, not the values).
    public let namespace: String
    /// `PostgresStore(URL without password, namespace: NAME)`.
    public let description: String

    private let shared: Shared
    private let writer: Locked<WriterState>

    /// Connects, creates the table if needed, loads the namespace, and starts listening.
    ///
    /// ```swift
    /// let store = try PostgresStore(url: "postgresql://localhost/app", namespace: "checkout")
    /// ```
    public init(url: String, namespace: String) throws {
        guard !namespace.isEmpty, !namespace.contains("\n") else {
            throw PostgresStoreError(
                kind: .invalidNamespace, store: "PostgresStore",
                message: "a namespace must be non-empty, without line breaks")
        }
        let redactor = Redactor(url: url)
        let description = "PostgresStore(\(redactor.safeURL), namespace: \(namespace))"
        self.namespace = namespace
        self.description = description
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(url: url, redact: redactor.redact)
            try Schema.prepare(connection)
        } catch let failure as PostgresConnection.Failure {
            throw PostgresStoreError(kind: .connectionFailed, store: description, message: failure.message)
        }
        let values = try Self.load(namespace, from: connection, store: description)
        shared = Shared(url: url, namespace: namespace, redactor: redactor, values: values)
        writer = Locked(WriterState(connection: connection))
        shared.startListening()
    }

    deinit {
        shared.stop()
    }

    /// True while the store has lost its server: reads then serve the last known values, which
    /// other instances may have changed since.
    public var isStale: Bool { shared.state.withLock { $0.stale } }

    /// The number of live observations of this store.
    public var observerCount: Int { shared.observers.count }

    /// The cached value.
    public func value(forKey key: String) -> PropertyListValue? {
        shared.values.withLock { $0[key] }
    }

    /// Every cached key and value.
    public func snapshot() -> [String: PropertyListValue] {
        shared.values.withLock { $0 }
    }

    /// Runs `body` in one transaction holding the namespace's advisory lock, reading from the
    /// database: atomic across every process and machine on the namespace.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try writer.withLock { state in
            let connection = try connectedWriter(&state)
            do {
                let outcome = try write(on: connection, body)
                shared.values.withLock { values in
                    for (key, value) in outcome.writes { values[key] = value }
                }
                shared.observers.publish(StoreChange(values: outcome.writes))
                return outcome.result
            } catch let failure as PostgresConnection.Failure {
                _ = try? connection.run("ROLLBACK")
                if failure.connectionLost { state.connection = nil }
                throw PostgresStoreError(
                    kind: failure.connectionLost ? .connectionLost : .server, store: description,
                    message: failure.message)
            } catch {
                _ = try? connection.run("ROLLBACK")
                throw error
            }
        }
    }

    /// Calls `handler` with every change, from this process or any other instance on the
    /// namespace, until the observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        shared.observers.add(handler)
    }

    // MARK: - Writing

    private func write<Result>(
        on connection: PostgresConnection, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> (writes: [String: PropertyListValue?], result: Result) {
        try connection.run("BEGIN")
        try connection.run("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(namespace)])
        var readFailure: (any Error)?
        var transaction = StoreTransaction(
            read: { [namespace] key in
                do {
                    let rows = try connection.run(
                        "SELECT value FROM prefs_entries WHERE namespace = $1 AND key = $2",
                        [.text(namespace), .text(key)])
                    return try firstCell(rows).map(PropertyListValue.init(binaryEncoded:))
                } catch {
                    if readFailure == nil { readFailure = error }
                    return nil
                }
            },
            keys: { [namespace] in
                do {
                    let rows = try connection.run(
                        "SELECT key FROM prefs_entries WHERE namespace = $1", [.text(namespace)])
                    return rows.compactMap { row in
                        row.first.flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
                    }
                } catch {
                    if readFailure == nil { readFailure = error }
                    return []
                }
            })
        let result = try body(&transaction)
        if let readFailure { throw readFailure }
        try PropertyListValue.checkNesting(of: transaction.writes)
        for (key, value) in transaction.writes {
            if let value {
                try connection.run(
                    """
                    INSERT INTO prefs_entries(namespace, key, value) VALUES ($1, $2, $3)
                    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value
                    """, [.text(namespace), .text(key), .bytes(value.binaryEncoded())])
            } else {
                try connection.run(
                    "DELETE FROM prefs_entries WHERE namespace = $1 AND key = $2",
                    [.text(namespace), .text(key)])
            }
            // Delivered to every listener when the transaction commits.
            try connection.run("SELECT pg_notify('\(Shared.channel)', $1)", [.text("\(namespace)\n\(key)")])
        }
        try connection.run("COMMIT")
        return (transaction.writes, result)
    }

    /// The writing connection, reconnecting (with back-off between failed attempts) when lost.
    private func connectedWriter(_ state: inout WriterState) throws -> PostgresConnection {
        if let connection = state.connection, connection.isConnected { return connection }
        state.connection = nil
        let now = ContinuousClock.now
        guard now >= state.nextAttempt else {
            throw PostgresStoreError(
                kind: .connectionLost, store: description,
                message: "the server is unreachable (\(state.lastFailure)); retrying with back-off")
        }
        do {
            let connection = try PostgresConnection(url: shared.url, redact: shared.redactor.redact)
            state.connection = connection
            state.backoff = .milliseconds(50)
            return connection
        } catch let failure as PostgresConnection.Failure {
            state.lastFailure = failure.message
            state.nextAttempt = now + state.backoff
            state.backoff = min(state.backoff * 2, .seconds(2))
            throw PostgresStoreError(kind: .connectionLost, store: description, message: failure.message)
        }
    }

    /// Every namespace that holds at least one value in the database at `url`.
    ///
    /// ```swift
    /// try PostgresStore.namespaces(url: "postgresql://localhost/app")  // ["billing", "checkout"]
    /// ```
    public static func namespaces(url: String) throws -> [String] {
        let redactor = Redactor(url: url)
        let store = "PostgresStore(\(redactor.safeURL))"
        do {
            let connection = try PostgresConnection(url: url, redact: redactor.redact)
            try Schema.prepare(connection)
            return try connection.run("SELECT DISTINCT namespace FROM prefs_entries ORDER BY 1").compactMap {
                row in
                row.first.flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
            }
        } catch let failure as PostgresConnection.Failure {
            throw PostgresStoreError(kind: .connectionFailed, store: store, message: failure.message)
        }
    }

    static func load(_ namespace: String, from connection: PostgresConnection, store: String) throws
        -> [String: PropertyListValue]
    {
        do {
            var values: [String: PropertyListValue] = [:]
            for row in try connection.run(
                "SELECT key, value FROM prefs_entries WHERE namespace = $1", [.text(namespace)])
            {
                guard let key = row[0], let blob = row[1],
                    let value = try? PropertyListValue(binaryEncoded: blob)
                else { continue }
                values[String(decoding: key, as: UTF8.self)] = value
            }
            return values
        } catch let failure as PostgresConnection.Failure {
            throw PostgresStoreError(kind: .connectionLost, store: store, message: failure.message)
        }
    }
}

/// The writing connection and its reconnection back-off.
struct WriterState {
    var connection: PostgresConnection?
    var nextAttempt = ContinuousClock.now
    var backoff: Duration = .milliseconds(50)
    var lastFailure = ""

    init(connection: PostgresConnection) {
        self.connection = connection
    }
}
