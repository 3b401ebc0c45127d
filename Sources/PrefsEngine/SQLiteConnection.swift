import Foundation

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

/// One SQLite connection: open, run statements with bound parameters, read rows.
///
/// Not thread-safe by itself: ``SQLiteStore`` uses it under its own lock (the connection is
/// opened with `SQLITE_OPEN_NOMUTEX`).
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    let path: String

    /// A failure reported by SQLite: its result code and message.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String
        /// The `errno` of SQLite's last failed system call (`sqlite3_system_errno`), or 0.
        var systemErrno: Int32 = 0

        /// The primary result code (`SQLITE_BUSY`, `SQLITE_CORRUPT` …) without extended bits.
        var primaryCode: Int32 { code & 0xFF }
        var description: String { "\(message) (SQLite code \(code))" }
    }

    /// The largest text or blob SQLite's C interface takes (its lengths are `Int32`); larger ones
    /// are refused with `SQLITE_TOOBIG` before reaching C.
    static let maximumBindLength = Int(Int32.max)

    /// A value to bind to a statement parameter.
    enum Parameter {
        case text(String)
        case blob(Data)
        /// A blob's bytes in memory that stays valid for the call (bound without a copy of our own:
        /// a checkpoint binds records where they are in the journal).
        case bytes(UnsafeRawBufferPointer)
        /// Text as UTF-8 bytes in memory that stays valid for the call (a checkpoint binds keys
        /// where they are in the journal, checked UTF-8 when the record was read).
        case textBytes(UnsafeRawBufferPointer)
        case integer(Int64)
        case null
    }

    /// Opens `path`.
    ///
    /// `immutable` (read-only only) promises SQLite that nobody changes the file, so it needs no `-shm`
    /// file: the only way to read a WAL database on a read-only file system.
    /// `create` (read-write only) makes the file when it is missing.
    init(path: String, readOnly: Bool = false, immutable: Bool = false, create: Bool = true) throws {
        self.path = path
        var flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
            | SQLITE_OPEN_NOMUTEX
            // A symbolic link at the path (or at its -wal or -shm) is refused, never followed.
            | SQLITE_OPEN_NOFOLLOW
        // `SQLITE_OPEN_NOFOLLOW` refuses a link in *any* component of the name, and folders are
        // the user's to arrange: every app container on an Apple device is under `/var` (a link
        // to `/private/var`), macOS's temporary folders are links, and dotfile managers link
        // `~/.config`. SQLite is given the folder with its links resolved, so only the file's
        // own name (and its `-wal` and `-shm`) is held to the rule.
        var name = Self.nameWithResolvedFolder(path)
        if immutable {
            flags |= SQLITE_OPEN_URI
            let escaped = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
            name = "file:\(escaped)?immutable=1"
        }
        let result = sqlite3_open_v2(name, &handle, flags, nil)
        guard result == SQLITE_OK else {
            let failure = Failure(
                code: result, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open",
                systemErrno: handle.map { sqlite3_system_errno($0) } ?? 0)
            sqlite3_close_v2(handle)
            handle = nil
            throw failure
        }
        sqlite3_extended_result_codes(handle, 1)
    }

    /// `path` with its folder's symbolic links resolved and its last component as given (a link
    /// there stays for `SQLITE_OPEN_NOFOLLOW` to refuse); `path` itself when the folder cannot be
    /// resolved, for SQLite to report.
    ///
    /// ```swift
    /// // With /var a link to /private/var:
    /// SQLiteConnection.nameWithResolvedFolder("/var/mobile/prefs.sqlite")  // "/private/var/mobile/prefs.sqlite"
    /// ```
    static func nameWithResolvedFolder(_ path: String) -> String {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let file = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !file.isEmpty, let resolved = SystemCall.resolvedPath(folder) else { return path }
        return resolved.hasSuffix("/") ? resolved + file : resolved + "/" + file
    }

    deinit {
        close()
    }

    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs SQL without parameters or results (several statements allowed).
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &error)
        if result != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw Failure(code: result, message: message, systemErrno: sqlite3_system_errno(handle))
        }
    }

    /// Runs one statement with bound parameters and calls `row` for each result row.
    ///
    /// `row` does not escape (an optional closure would): what it captures stays on the stack,
    /// without a heap box and an exclusivity check per access (a tenth of opening a large store).
    func run(_ sql: String, _ parameters: [Parameter] = [], row: (Row) throws -> Void = { _ in })
        throws
    {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, parameter) in parameters.enumerated() {
            let position = Int32(index + 1)
            let result: Int32
            switch parameter {
            case .text(var text):
                // By byte count, so a string holding NUL characters is bound whole; from the
                // string's own UTF-8 (SQLite copies it), without an array per parameter.
                try Self.checkBindLength(text.utf8.count)
                result = text.withUTF8 { bytes in
                    guard let start = bytes.baseAddress, !bytes.isEmpty else {
                        // An empty string still needs a pointer to something to be text, not NULL.
                        return sqlite3_bind_text(statement, position, "", 0, transient)
                    }
                    return start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text(statement, position, $0, Int32(bytes.count), transient)
                    }
                }
            case .integer(let number): result = sqlite3_bind_int64(statement, position, number)
            case .null: result = sqlite3_bind_null(statement, position)
            case .blob(let data):
                try Self.checkBindLength(data.count)
                result = data.withUnsafeBytes { raw in
                    // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
                    sqlite3_bind_blob(
                        statement, position, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                        Int32(raw.count), transient)
                }
            case .bytes(let raw):
                try Self.checkBindLength(raw.count)
                result = sqlite3_bind_blob(
                    statement, position, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                    transient)
            case .textBytes(let raw):
                try Self.checkBindLength(raw.count)
                // An empty string still needs a pointer to something to be text, not NULL.
                let start = raw.isEmpty ? UnsafeRawPointer(("" as StaticString).utf8Start) : raw.baseAddress!
                result = sqlite3_bind_text(
                    statement, position, start.assumingMemoryBound(to: CChar.self), Int32(raw.count),
                    transient)
            }
            guard result == SQLITE_OK else { throw failure(result) }
        }
        while true {
            let result = sqlite3_step(statement)
            if result == SQLITE_DONE { return }
            guard result == SQLITE_ROW else { throw failure(result) }
            try row(Row(statement: statement))
        }
    }

    private static func checkBindLength(_ count: Int) throws {
        guard count <= maximumBindLength else {
            throw Failure(
                code: SQLITE_TOOBIG,
                message: "a value of \(count) bytes is larger than SQLite takes (\(maximumBindLength) bytes)")
        }
    }

    /// The first column of the first row as an integer, or `nil` when there is no row.
    func integer(_ sql: String, _ parameters: [Parameter] = []) throws -> Int64? {
        var value: Int64?
        try run(sql, parameters) { row in if value == nil { value = row.integer(0) } }
        return value
    }

    /// The first column of the first row as text, or `nil`.
    func text(_ sql: String) throws -> String? {
        var value: String?
        try run(sql) { row in if value == nil { value = row.text(0) } }
        return value
    }

    /// Whether SQLite opened the file for reading only (asked for writing, it falls back to
    /// reading where the file or its file system cannot be written).
    var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// Keeps `-wal` and `-shm` when this connection is the last to close (SQLite deletes them
    /// otherwise, and makes them anew at the next open).
    ///
    /// A store closes its connection between uses, and a file made anew takes its folder's data
    /// protection class, not the store's: while a device is locked, a folder of class
    /// `complete` refuses the new file, and every catch-up and move would fail. Kept, they keep
    /// the class the store gave them once (``SQLiteStore/FileProtection``).
    func keepsJournalFilesWhenClosed() {
        var keep: Int32 = 1
        sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &keep)
    }

    /// How long a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs `body`, running it again while SQLite answers `SQLITE_BUSY` or `SQLITE_LOCKED`, until
    /// `timeout` has passed.
    ///
    /// The busy timeout alone is not enough: SQLite returns `SQLITE_BUSY` at once, without calling
    /// the busy handler, in some cases (another connection switching the file to WAL or recovering
    /// it, for example). Only use it around steps that leave nothing behind when they fail.
    func retryingWhileBusy<Result>(
        timeout: Duration, givingUpWhen giveUp: () -> Bool = { false }, _ body: () throws -> Result
    ) throws -> Result {
        let deadline = ContinuousClock.now + timeout
        var pause = 1
        while true {
            do {
                return try body()
            } catch let failure as Failure
                where failure.primaryCode == SQLITE_BUSY || failure.primaryCode == SQLITE_LOCKED
            {
                guard ContinuousClock.now < deadline, !giveUp() else { throw failure }
                usleep(UInt32(1_000 * Int.random(in: 1...pause)))
                pause = min(pause * 2, 50)
            }
        }
    }

    private var lastMessage: String {
        handle.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection"
    }

    /// The failure a result code means, with SQLite's message and the system call's `errno`.
    private func failure(_ code: Int32) -> Failure {
        Failure(code: code, message: lastMessage, systemErrno: handle.map { sqlite3_system_errno($0) } ?? 0)
    }

    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else { throw failure(result) }
        statements[sql] = statement
        return statement
    }

    /// One result row, valid only inside the `row` closure of ``run(_:_:row:)``.
    struct Row {
        fileprivate let statement: OpaquePointer

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        func text(_ column: Int32) -> String {
            guard let pointer = sqlite3_column_text(statement, column) else { return "" }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        }
        /// The text's UTF-8 bytes in place, as stored, valid until the next step (no copy).
        func textBytes(_ column: Int32) -> UnsafeRawBufferPointer {
            guard let pointer = sqlite3_column_text(statement, column) else {
                return UnsafeRawBufferPointer(start: nil, count: 0)
            }
            return UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column)))
        }
        /// The blob's bytes in place, valid until the next step (no copy).
        func blobBytes(_ column: Int32) -> UnsafeRawBufferPointer {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let pointer = sqlite3_column_blob(statement, column) else {
                return UnsafeRawBufferPointer(start: nil, count: 0)
            }
            return UnsafeRawBufferPointer(start: pointer, count: count)
        }
    }
}

/// Tells SQLite to copy bound text and blobs before the bind call returns (`SQLITE_TRANSIENT`,
/// a macro Swift cannot import).
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
