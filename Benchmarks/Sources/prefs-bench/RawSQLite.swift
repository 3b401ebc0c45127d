import Foundation

#if canImport(SQLite3)
    import SQLite3
#else
    import BenchSQLite
#endif

/// The baseline for SQLite writes: the C API used directly, one prepared upsert committed alone
/// (or many in one transaction, for the floor of sustained writes).
///
/// WAL mode with `synchronous=NORMAL` (survives a crash of the process) or `FULL` (survives a
/// power loss). Several processes may write one file: a busy database is waited for (as
/// SQLiteStore waits for its lock), so every write counted is a write kept.
final class RawSQLite {
    private var handle: OpaquePointer?
    private var upsert: OpaquePointer?
    /// Whether the table is `SQLiteStore`'s own shape (a rowid table with `seq`), not the
    /// baseline's `WITHOUT ROWID` table of keys and values.
    private let storeShape: Bool

    /// The table `SQLiteStore` keeps its rows in, as schema version 3 creates it.
    private static let storeTable =
        "CREATE TABLE IF NOT EXISTS entries(key TEXT PRIMARY KEY NOT NULL, value BLOB, seq INTEGER NOT NULL)"
    private static let baselineTable =
        "CREATE TABLE IF NOT EXISTS entries(key TEXT PRIMARY KEY NOT NULL, value BLOB) WITHOUT ROWID"

    /// `storeShape: true` makes the table as `SQLiteStore` does, and each write sets `seq` too.
    init(path: String, synchronous: String = "NORMAL", storeShape: Bool = false) {
        self.storeShape = storeShape
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        // Four processes creating one new file at once: switching it to WAL can be refused as
        // busy without the busy handler's wait, which left the table missing and every write
        // failing. The setup is tried again until it succeeds (for at most 10 s).
        let deadline = Date().addingTimeInterval(10)
        var setup: Int32
        repeat {
            setup = sqlite3_exec(
                handle,
                """
                PRAGMA busy_timeout=10000; PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous);
                \(storeShape ? Self.storeTable : Self.baselineTable);
                """, nil, nil, nil)
            if setup != SQLITE_OK { usleep(1_000) }
        } while setup != SQLITE_OK && Date() < deadline
        let prepared = sqlite3_prepare_v2(
            handle,
            storeShape
                ? "INSERT INTO entries(key, value, seq) VALUES (?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET value = excluded.value, seq = excluded.seq"
                : "INSERT INTO entries(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            -1, &upsert, nil)
        if setup != SQLITE_OK || prepared != SQLITE_OK {
            fatalError("raw SQLite setup of \(path) failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    deinit {
        sqlite3_finalize(upsert)
        sqlite3_close_v2(handle)
    }

    /// One upsert, in its own (autocommit) transaction.
    func write(key: String, value: Int64) {
        write(key: key, bytes: withUnsafeBytes(of: value.littleEndian, Array.init))
    }

    /// Runs `body` in one transaction: its writes commit together.
    func inOneTransaction(_ body: () -> Void) {
        sqlite3_exec(handle, "BEGIN", nil, nil, nil)
        body()
        if sqlite3_exec(handle, "COMMIT", nil, nil, nil) != SQLITE_OK {
            fatalError("raw commit failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    /// One upsert of bytes already in memory, bound where they are (`SQLITE_STATIC`: no copy, no
    /// Swift string made), with `sequence` as `seq`: SQLite's own work for a row, for the floor.
    func write(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, sequence: Int64) {
        key.withMemoryRebound(to: CChar.self) { key in
            _ = sqlite3_bind_text(upsert, 1, key.baseAddress, Int32(key.count), nil)
        }
        sqlite3_bind_blob(upsert, 2, value.baseAddress, Int32(value.count), nil)
        if storeShape { sqlite3_bind_int64(upsert, 3, sequence) }
        stepTheUpsert()
    }

    /// One upsert of a blob (with `sequence` as `seq` in the store's shape), in its own
    /// (autocommit) transaction unless inside ``inOneTransaction(_:)``.
    func write(key: String, bytes: [UInt8], sequence: Int64 = 0) {
        var bytes = bytes
        sqlite3_bind_text(upsert, 1, key, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        sqlite3_bind_blob(
            upsert, 2, &bytes, Int32(bytes.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        if storeShape { sqlite3_bind_int64(upsert, 3, sequence) }
        stepTheUpsert()
    }

    /// Runs the bound upsert and makes it ready for the next.
    private func stepTheUpsert() {
        let result = sqlite3_step(upsert)
        sqlite3_reset(upsert)
        if result != SQLITE_DONE {
            fatalError("raw upsert failed: \(String(cString: sqlite3_errstr(result)))")
        }
    }
}
