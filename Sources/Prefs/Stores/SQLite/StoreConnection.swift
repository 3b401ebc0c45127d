import Foundation
import PrefsJournal

/// A store's connection to its SQLite file, open only while it is used, and the statements the
/// store runs on it.
///
/// A store with a journal needs SQLite only to move the journal in and to catch up after a long
/// absence, so it opens the connection for that and closes it afterwards. An open WAL connection
/// holds a shared lock on the `-shm` file for as long as it is open, and iOS terminates an app
/// suspended while holding a file lock in an App Group container (`0xdead10cc`): between calls a
/// store holds no lock at all. The connection opened again is configured as the first, and must
/// open the same file (a file moved over the path is `.replaced`, never written).
///
/// ```swift
/// let connection = store.core.sqlite
/// let sequence = try connection.withDatabase(during: "a look") { database in
///     try connection.perform { try StoreConnection.checkpointedSequence(database.connection) }
/// }
/// ```
final class StoreConnection: Sendable {
    let path: String
    private let options: SQLiteStore.Options
    private let database: Locked<SQLiteStore.Database>
    /// Whether the connection is closed between uses: always, in the library (a read-only store
    /// too: its WAL connection would hold the `-shm` lock for good); tests may keep it open.
    private let closesWhenIdle: Bool

    init(path: String, options: SQLiteStore.Options, database: SQLiteStore.Database, closesWhenIdle: Bool) {
        self.path = path
        self.options = options
        self.closesWhenIdle = closesWhenIdle
        var database = database
        if closesWhenIdle {
            // The connection that opened the file is closed now, not at the first checkpoint: an
            // open WAL connection keeps shared locks on the database and its `-shm`.
            database.connection.close()
            database.isIdle = true
        }
        self.database = Locked(database)
    }

    /// Runs `body` holding the connection (which is valid only inside `body`), opening it first
    /// when it is closed between uses; throws `.closed` once the store has closed it.
    func withDatabase<Result>(during operation: String, _ body: (inout SQLiteStore.Database) throws -> Result)
        throws -> Result
    {
        try database.withLock { database in
            guard !database.isClosed else {
                throw StoreError(path: path, kind: .closed, detail: "closed before \(operation)")
            }
            if database.isIdle {
                database.connection = try reopen(database)
                database.isIdle = false
            }
            defer {
                if closesWhenIdle {
                    database.connection.close()
                    database.isIdle = true
                }
            }
            return try body(&database)
        }
    }

    /// Closes the connection for good (the store's last step).
    func close() {
        database.withLock { database in
            database.connection.close()
            database.isClosed = true
        }
    }

    /// A connection to the store's file, configured as the store's first one was.
    private func reopen(_ database: SQLiteStore.Database) throws -> SQLiteConnection {
        let openedFile = database.file
        let replaced = StoreError(
            path: path, kind: .replaced, detail: "another file is at the path now, or none")
        // Looked at before opening (nothing is created at a path whose file went) and after.
        guard FileIdentity(path: path) == openedFile else { throw replaced }
        let connection = try perform {
            try SQLiteStore.checkpointConnection(
                path: path, options: options, readOnly: database.readOnly, immutable: database.immutable)
        }
        guard FileIdentity(path: path) == openedFile else {
            connection.close()
            throw replaced
        }
        return connection
    }

    /// Runs a SQLite call, turning its failure into an ``StoreError`` naming this file.
    func perform<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let failure as SQLiteConnection.Failure {
            throw StoreError(path: path, failure)
        }
    }

    // MARK: - Statements

    /// The sequence number up to which SQLite holds every record (0 for a file without one).
    static func checkpointedSequence(_ connection: SQLiteConnection) throws -> UInt64 {
        let stored = try connection.integer(
            "SELECT value FROM prefs_meta WHERE name = 'checkpointed_sequence'")
        return UInt64(bitPattern: stored ?? 0)
    }

    /// Records that SQLite holds every record up to `sequence`.
    static func setCheckpointedSequence(_ sequence: UInt64, in connection: SQLiteConnection) throws {
        try connection.run(
            """
            INSERT INTO prefs_meta(name, value) VALUES ('checkpointed_sequence', ?1)
            ON CONFLICT(name) DO UPDATE SET value = excluded.value
            """, [.integer(Int64(bitPattern: sequence))])
    }

    /// Stores a key's value (or its removal, `.null`) with the sequence number of its write.
    static func upsert(
        _ key: StoreKey, _ value: SQLiteConnection.Parameter, sequence: UInt64,
        into connection: SQLiteConnection
    ) throws {
        try upsert(key: .text(key.name), value, sequence: sequence, into: connection)
    }

    /// The same with the key as a parameter (a checkpoint binds its bytes in the journal).
    static func upsert(
        key: SQLiteConnection.Parameter, _ value: SQLiteConnection.Parameter, sequence: UInt64,
        into connection: SQLiteConnection
    ) throws {
        try connection.run(
            """
            INSERT INTO prefs_entries(key, value, seq) VALUES (?1, ?2, ?3)
            ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq
            """, [key, value, .integer(Int64(bitPattern: sequence))])
    }

    /// What changed in SQLite after a sequence number.
    struct ChangedRows {
        /// Each changed key's value (`nil`: removed).
        var values: [StoreKey: PropertyListValue?] = [:]
        /// Keys whose stored bytes this release cannot decode (left out of `values`).
        var undecodable: [String] = []
        /// The highest sequence number SQLite holds (rows and the checkpoint mark).
        var highest: UInt64
    }

    /// The rows changed after `known`, and the checkpoint mark, read in one transaction.
    func rowsChanged(after known: UInt64, in database: inout SQLiteStore.Database) throws -> ChangedRows {
        let connection = database.connection
        var rows = ChangedRows(highest: known)
        try perform {
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            rows.highest = max(rows.highest, try Self.checkpointedSequence(connection))
            try connection.run(
                "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1",
                [.integer(Int64(bitPattern: known))]
            ) { row in
                let key = StoreKey(row.text(0))
                rows.highest = max(rows.highest, UInt64(bitPattern: row.integer(2)))
                if row.isNull(1) {
                    rows.values[key] = .some(nil)
                } else if let value = try? PropertyListValue(storedEncodingBytes: row.blobBytes(1)) {
                    rows.values[key] = .some(value)
                } else {
                    rows.undecodable.append(key.name)
                }
            }
        }
        return rows
    }
}
