import Foundation
import Prefs

/// What the store and its listening thread share: the cache, the observers, the connection
/// settings, and whether the server is reachable.
final class Shared: Sendable {
    static let channel = "prefs_changes"

    let url: String
    let namespace: String
    let redactor: Redactor
    let values: Locked<[String: PropertyListValue]>
    let observers = StoreObservers(label: "Postgres")
    let state = Locked((stale: false, stopped: false))

    init(url: String, namespace: String, redactor: Redactor, values: [String: PropertyListValue]) {
        self.url = url
        self.namespace = namespace
        self.redactor = redactor
        self.values = Locked(values)
    }

    // Signalled when the listening thread has finished.
    private let finished = DispatchSemaphore(value: 0)

    /// Stops listening and waits (briefly) for the thread to end, so that no thread is still using
    /// libpq while the process exits.
    func stop() {
        state.withLock { $0.stopped = true }
        _ = finished.wait(timeout: .now() + 2)
    }

    /// Listens on its own connection and thread until stopped: applies other instances' changes
    /// to the cache, and after a lost connection reconnects with back-off and re-reads everything.
    func startListening() {
        let thread = Thread { [self] in
            listen()
            finished.signal()
        }
        thread.name = "prefs.postgres.listen"
        thread.start()
    }

    private func listen() {
        var connection: PostgresConnection?
        var backoff: Duration = .milliseconds(50)
        while !state.withLock({ $0.stopped }) {
            do {
                if connection == nil {
                    let fresh = try PostgresConnection(url: url, redact: redactor.redact)
                    try fresh.run("LISTEN \(Self.channel)")
                    connection = fresh
                    // NOTIFY does not replay: what changed before LISTEN took effect (since the
                    // store first loaded, or while the server was away) is found by reading it all.
                    try reloadAll(using: fresh)
                    backoff = .milliseconds(50)
                    state.withLock { $0.stale = false }
                }
                guard let live = connection else { continue }
                let notifications = try live.notifications(waitingUpTo: .milliseconds(100))
                let keys = Set(
                    notifications.compactMap { notification -> String? in
                        let parts = notification.payload.split(
                            separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
                        guard parts.count == 2, parts[0] == namespace else { return nil }
                        return String(parts[1])
                    })
                if !keys.isEmpty { try refresh(keys, using: live) }
            } catch {
                connection = nil
                state.withLock { $0.stale = true }
                Thread.sleep(forTimeInterval: backoff.seconds)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    /// Reads the current values of `keys` and applies those that differ from the cache.
    private func refresh(_ keys: Set<String>, using connection: PostgresConnection) throws {
        var current: [String: PropertyListValue?] = [:]
        for key in keys {
            let rows = try connection.run(
                "SELECT value FROM prefs_entries WHERE namespace = $1 AND key = $2",
                [.text(namespace), .text(key)])
            current[key] = .some(firstCell(rows).flatMap { try? PropertyListValue(binaryEncoded: $0) })
        }
        apply(current, replacingEverything: false)
    }

    private func reloadAll(using connection: PostgresConnection) throws {
        var current: [String: PropertyListValue?] = [:]
        for row in try connection.run(
            "SELECT key, value FROM prefs_entries WHERE namespace = $1", [.text(namespace)])
        {
            guard let key = row[0], let blob = row[1] else { continue }
            current[String(decoding: key, as: UTF8.self)] = .some(try? PropertyListValue(binaryEncoded: blob))
        }
        apply(current, replacingEverything: true)
    }

    /// Applies what the server holds to the cache and publishes what actually changed (this
    /// process's own writes are already in the cache, so their echoes change nothing).
    private func apply(_ current: [String: PropertyListValue?], replacingEverything: Bool) {
        let changed: [String: PropertyListValue?] = values.withLock { values in
            var changed: [String: PropertyListValue?] = [:]
            for (key, value) in current where values[key] != value {
                values[key] = value
                changed[key] = .some(value)
            }
            if replacingEverything {
                for key in values.keys where current[key] == nil {
                    values[key] = nil
                    changed[key] = .some(nil)
                }
            }
            return changed
        }
        observers.publish(StoreChange(values: changed))
    }
}

/// Creates the table and checks the schema version, once per database, safely when several
/// processes start at once.
enum Schema {
    static let version = 1

    static func prepare(_ connection: PostgresConnection) throws {
        // "relation already exists, skipping" notices are not worth a line on stderr.
        try connection.run("SET client_min_messages = warning")
        try connection.run("BEGIN")
        do {
            // Concurrent CREATE TABLE IF NOT EXISTS can still collide; one process at a time.
            try connection.run("SELECT pg_advisory_xact_lock(7370215)")
            try connection.run(
                """
                CREATE TABLE IF NOT EXISTS prefs_entries (
                    namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL,
                    PRIMARY KEY (namespace, key))
                """)
            try connection.run(
                "CREATE TABLE IF NOT EXISTS prefs_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            try connection.run(
                "INSERT INTO prefs_meta(name, value) VALUES ('schema_version', $1) ON CONFLICT (name) DO NOTHING",
                [.text(String(version))])
            let found = try connection.run("SELECT value FROM prefs_meta WHERE name = 'schema_version'")
            let stored = firstCell(found).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            guard stored <= version else {
                throw PostgresConnection.Failure(
                    message:
                        "the table was created by a newer Prefs (schema version \(stored); this release knows \(version))",
                    connectionLost: false)
            }
            try connection.run("COMMIT")
        } catch {
            _ = try? connection.run("ROLLBACK")
            throw error
        }
    }
}

/// Keeps the password out of everything the store says.
struct Redactor: Sendable {
    let safeURL: String
    private let secrets: [String]

    init(url: String) {
        var secrets: [String] = []
        var components = URLComponents(string: url)
        if let password = components?.password, !password.isEmpty {
            secrets.append(password)
            if let decoded = password.removingPercentEncoding { secrets.append(decoded) }
            components?.password = nil
        }
        if let items = components?.queryItems {
            for item in items where item.name == "password" {
                if let value = item.value, !value.isEmpty { secrets.append(value) }
            }
            components?.queryItems = items.map {
                $0.name == "password" ? URLQueryItem(name: $0.name, value: "***") : $0
            }
        }
        self.secrets = secrets.sorted { $0.count > $1.count }
        safeURL = components?.string ?? "(a connection string)"
    }

    func redact(_ text: String) -> String {
        secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "***") }
    }
}

/// A failure of a ``PostgresStore``; its message never contains the password.
///
/// ```swift
/// catch let error as PostgresStoreError where error.kind == .connectionLost { retryLater() }
/// ```
public struct PostgresStoreError: Error, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Equatable {
        /// The store could not connect when created (wrong password, unreachable server …).
        case connectionFailed
        /// The server went away; the write was not made (or not confirmed). The store reconnects.
        case connectionLost
        /// The server refused a statement.
        case server
        /// The namespace is empty or has a line break.
        case invalidNamespace
    }

    /// The kind of failure.
    public let kind: Kind
    /// The store, described without its password.
    public let store: String
    /// What libpq or the server said, without the password.
    public let message: String

    /// `STORE: MESSAGE`.
    public var description: String { "\(store): \(message)" }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// The first column of the first row, or `nil` when there is no row or it is NULL.
func firstCell(_ rows: [[Data?]]) -> Data? {
    guard let row = rows.first, let cell = row.first else { return nil }
    return cell
}
