import Foundation
import PrefsModel
import PrefsSupport

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
    private let options: StoreEngine.Settings
    private let database: Locked<StoreEngine.Database>
    /// Whether the connection is closed between uses: always, in the library (a read-only store
    /// too: its WAL connection would hold the `-shm` lock for good); tests may keep it open.
    private let closesWhenIdle: Bool

    init(path: String, options: StoreEngine.Settings, database: StoreEngine.Database, closesWhenIdle: Bool) {
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
    ///
    /// With `expiry`, the wait for another thread's use of the connection ends, throwing
    /// `.expired`, as soon as the system asks for its background time back. Opening it again
    /// waits for another connection's lock at most `wait` (the lock timeout unless given).
    func withDatabase<Result>(
        during operation: String, expiry: ExpiringActivity.Expiry? = nil, waitingAtMost wait: Duration? = nil,
        _ body: (inout StoreEngine.Database) throws -> Result
    )
        throws -> Result
    {
        guard let expiry else {
            return try database.withLock { try use(&$0, during: operation, expiry: nil, wait: wait, body) }
        }
        let expired = { expiry.isExpired }
        let result = try database.withLock(unless: expired) {
            try use(&$0, during: operation, expiry: expiry, wait: wait, body)
        }
        guard let result else {
            throw StoreError(
                path: path, kind: .expired, detail: "while waiting for the connection, before \(operation)")
        }
        return result
    }

    private func use<Result>(
        _ database: inout StoreEngine.Database, during operation: String, expiry: ExpiringActivity.Expiry?,
        wait: Duration?, _ body: (inout StoreEngine.Database) throws -> Result
    ) throws -> Result {
        guard !database.isClosed else {
            throw StoreError(path: path, kind: .closed, detail: "closed before \(operation)")
        }
        let reopened = database.isIdle
        if reopened {
            database.connection = try reopen(database, expiry: expiry, wait: wait)
            database.isIdle = false
        }
        defer {
            // SQLite deletes `-wal` and `-shm` when its last connection closes, and a
            // connection opened again makes them anew with the folder's protection class:
            // they get the store's again, whenever they are made.
            if reopened && !database.readOnly { options.protectFiles(path) }
            if closesWhenIdle {
                database.connection.close()
                database.isIdle = true
            }
        }
        return try body(&database)
    }

    /// Closes the connection for good (the store's last step).
    func close() {
        database.withLock { database in
            database.connection.close()
            database.isClosed = true
        }
    }

    /// A connection to the store's file, configured as the store's first one was (a wait for
    /// another connection's lock meanwhile ends at `expiry`, throwing `.expired`).
    private func reopen(_ database: StoreEngine.Database, expiry: ExpiringActivity.Expiry?, wait: Duration?)
        throws -> SQLiteConnection
    {
        let openedFile = database.file
        let replaced = StoreError(
            path: path, kind: .replaced, detail: "another file is at the path now, or none")
        // Looked at before opening (nothing is created at a path whose file went) and after.
        guard FileIdentity(path: path) == openedFile else { throw replaced }
        if options.faults.sqliteFilesLocked?() == true {
            throw StoreError(
                path: path, kind: .protectedDataUnavailable,
                detail: "the device is locked (a test's stand-in)")
        }
        let connection: SQLiteConnection
        do {
            connection = try perform {
                try StoreEngine.checkpointConnection(
                    path: path, options: options, readOnly: database.readOnly, immutable: database.immutable,
                    waitingAtMost: wait, giveUpWhen: { expiry?.isExpired == true })
            }
        } catch  where expiry?.isExpired == true {
            throw StoreError(path: path, kind: .expired, detail: "while waiting to open SQLite again")
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
        try meta("checkpointed_sequence", in: connection) ?? 0
    }

    /// Records that SQLite holds every record up to `sequence`, moved by a checkpoint that found
    /// it holding every record up to `previous`.
    ///
    /// The list of moves (`prefs_moved`) is complete from `moved_from` through `moved_through`.
    /// When the last checkpoint was not this release's (one that lists nothing: `moved_through`
    /// is not `previous`), the list is complete only from `previous` on. Moves more than
    /// ``keptMoves`` sequence numbers old are cut from the list: a store that far behind reads
    /// every row instead.
    static func setCheckpointedSequence(
        _ sequence: UInt64, after previous: UInt64, in connection: SQLiteConnection
    ) throws {
        try setMeta("checkpointed_sequence", sequence, in: connection)
        let listedThrough = try meta("moved_through", in: connection)
        var listedFrom = try meta("moved_from", in: connection) ?? previous
        if listedThrough != previous { listedFrom = max(listedFrom, previous) }
        if sequence > keptMoves && sequence - keptMoves > listedFrom {
            listedFrom = sequence - keptMoves
            try connection.run(
                "DELETE FROM prefs_moved WHERE batch <= ?1", [.integer(Int64(bitPattern: listedFrom))])
        }
        try setMeta("moved_from", listedFrom, in: connection)
        try setMeta("moved_through", sequence, in: connection)
    }

    /// How many sequence numbers of moves the list keeps (about 2.5 MB of list at most).
    static let keptMoves: UInt64 = 1 << 17

    /// Starts the list of moves at `sequence` (a new file, or one of an earlier schema).
    static func startListingMoves(at sequence: UInt64, in connection: SQLiteConnection) throws {
        try setMeta("moved_from", sequence, in: connection)
        try setMeta("moved_through", sequence, in: connection)
    }

    private static func meta(_ name: String, in connection: SQLiteConnection) throws -> UInt64? {
        try connection.integer("SELECT value FROM prefs_meta WHERE name = ?1", [.text(name)])
            .map { UInt64(bitPattern: $0) }
    }

    private static func setMeta(_ name: String, _ value: UInt64, in connection: SQLiteConnection) throws {
        try connection.run(
            """
            INSERT INTO prefs_meta(name, value) VALUES (?1, ?2)
            ON CONFLICT(name) DO UPDATE SET value = excluded.value
            """, [.text(name), .integer(Int64(bitPattern: value))])
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

    /// Lists the keys a checkpoint moved (``MovedKeys``) under `batch`, the highest sequence
    /// number it moved: one row per checkpoint, not one per key (a row per key cost a third of
    /// what an upsert does).
    static func list(_ moved: MovedKeys, batch: UInt64, in connection: SQLiteConnection) throws {
        guard !moved.isEmpty else { return }
        try moved.bytes.withUnsafeBytes { bytes in
            try connection.run(
                "INSERT INTO prefs_moved(batch, keys) VALUES (?1, ?2) ON CONFLICT(batch) DO UPDATE SET keys = keys || excluded.keys",
                [.integer(Int64(bitPattern: batch)), .bytes(bytes)])
        }
    }

    /// Keys a checkpoint moved, as one blob: each key's UTF-8 bytes after their count (4 bytes,
    /// little-endian).
    struct MovedKeys {
        private(set) var bytes: [UInt8] = []
        var isEmpty: Bool { bytes.isEmpty }

        mutating func add(_ key: UnsafeRawBufferPointer) {
            withUnsafeBytes(of: UInt32(key.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: key)
        }

        mutating func add(_ key: String) {
            var key = key
            key.withUTF8 { add(UnsafeRawBufferPointer($0)) }
        }

        /// The keys in a listed blob, or `nil` when it is not one (a damaged file).
        static func keys(in blob: UnsafeRawBufferPointer) -> [StoreKey]? {
            var keys: [StoreKey] = []
            var offset = 0
            while offset < blob.count {
                guard blob.count - offset >= 4 else { return nil }
                // Clamped: a damaged count past a 32-bit Int fails the check below, never traps.
                let count = Int(
                    clamping: UInt32(
                        littleEndian: blob.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                offset += 4
                guard count <= blob.count - offset,
                    let key = String(bytes: blob[offset..<offset + count], encoding: .utf8)
                else { return nil }
                keys.append(StoreKey(key))
                offset += count
            }
            return keys
        }
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
    ///
    /// From the list of moves when it is complete after `known`; otherwise (a store behind the
    /// list's start, or a checkpoint of a release that lists nothing) from every row.
    ///
    /// With `expiry`, a wait for another connection's lock is this store's own short steps, not
    /// SQLite's busy handler: it ends, throwing `.expired`, as soon as the system asks for its
    /// background time back (a read leaves nothing behind, so it is simply read again).
    func rowsChanged(
        after known: UInt64, in database: inout StoreEngine.Database, expiry: ExpiringActivity.Expiry? = nil
    ) throws -> ChangedRows {
        let connection = database.connection
        guard let expiry else { return try perform { try rowsChanged(after: known, in: connection) } }
        connection.setBusyTimeout(milliseconds: 0)
        defer { connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds) }
        do {
            return try perform {
                try connection.retryingWhileBusy(
                    timeout: options.busyTimeout, givingUpWhen: { expiry.isExpired }
                ) {
                    try rowsChanged(after: known, in: connection)
                }
            }
        } catch  where expiry.isExpired {
            throw StoreError(path: path, kind: .expired, detail: "while waiting to read SQLite")
        }
    }

    /// The same, throwing SQLite's own failures (`SQLITE_BUSY` among them, for the retry above).
    private func rowsChanged(after known: UInt64, in connection: SQLiteConnection) throws -> ChangedRows {
        var rows = ChangedRows(highest: known)
        do {
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            let checkpointed = try Self.checkpointedSequence(connection)
            rows.highest = max(rows.highest, checkpointed)
            let listedFrom = try Self.meta("moved_from", in: connection)
            let listedThrough = try Self.meta("moved_through", in: connection)
            let listed =
                listedFrom.map { $0 <= known } == true && listedThrough.map { $0 >= checkpointed } == true
            // Keys as StoreKeys: two spellings of one text (Unicode normalisation) are two keys.
            var keys: Set<StoreKey>?
            if listed {
                keys = []
                try connection.run(
                    "SELECT keys FROM prefs_moved WHERE batch > ?1", [.integer(Int64(bitPattern: known))]
                ) { row in
                    guard let listedKeys = MovedKeys.keys(in: row.blobBytes(0)) else {
                        keys = nil
                        return
                    }
                    keys?.formUnion(listedKeys)
                }
            }
            func add(_ row: SQLiteConnection.Row) {
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
            let knownNumber = SQLiteConnection.Parameter.integer(Int64(bitPattern: known))
            // A look-up per key costs several times a row of a scan: past an eighth of the rows
            // (the largest rowid counts them, or a few more), the scan is cheaper.
            if let listedKeys = keys,
                listedKeys.count * 8 > (try connection.integer("SELECT max(rowid) FROM prefs_entries") ?? 0)
            {
                keys = nil
            }
            if let keys {
                // Each listed key looked up (a batch can hold writes from before `known` too:
                // the rows' own numbers leave those out).
                for key in keys {
                    try connection.run(
                        "SELECT key, value, seq FROM prefs_entries WHERE key = ?1 AND seq > ?2",
                        [.text(key.name), knownNumber], row: add)
                }
            } else {
                // Not listed since `known` (or a damaged list): every row.
                try connection.run(
                    "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1", [knownNumber], row: add)
            }
        }
        return rows
    }
}
