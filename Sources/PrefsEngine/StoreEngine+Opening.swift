import Foundation
import PrefsModel
import PrefsSupport

/// Opening a store file: folders and permissions, WAL, the schema and its version, loading the
/// cache, and what to do with a file that is damaged.
extension StoreEngine {
    /// The schema this release writes, kept in the file's `PRAGMA user_version` so later releases
    /// can migrate it (and this one refuses a newer file rather than misread it).
    ///
    /// Version 2 adds the journal (`<name>-prefs`) and `prefs_meta.checkpointed_sequence`, and
    /// keeps the entries in a rowid table: a release that knows only version 1 would write past
    /// the journal, so it must refuse the file.
    ///
    /// Version 3 lists the keys each checkpoint moved, by sequence number (`prefs_moved`), in place
    /// of an index of the entries by sequence number: catching up from SQLite reads the list,
    /// and an upsert no longer moves the key's entry in an index (a third of a sustained write at
    /// 100,000 keys). A release that knows only version 2 would move records without listing
    /// them, so it must refuse the file.
    static let schemaVersion: Int64 = 3

    /// How long opening waits for the journal's lock to check it before leaving that to the
    /// first write (the engine's own bound for opening, one figure for both).
    static let openingLockWait = Journal.openingLockWait

    package struct Opened {
        var database: Database
        var cache: Cache
        var journal: Journal?
        package var recovery: Recovery?
        /// The highest sequence number in the file: a new journal numbers its records after it.
        var highestStored: UInt64 = 0
        /// The database's identity (`nil`: a read-only file that has none), which its journal
        /// must carry.
        var databaseID: UInt64?
    }

    package static func open(path: String, options: Settings) throws -> Opened {
        do {
            return try openFile(path: path, options: options)
        } catch let error as StoreError where error.isCorruption && options.recreateOnCorruption {
            let movedTo = try moveAside(path: path, because: error)
            var opened = try openFile(path: path, options: options)
            opened.recovery = Recovery(error: error, movedTo: movedTo)
            return opened
        }
    }

    private static func openFile(path: String, options: Settings) throws -> Opened {
        try refuseSpecialNames(path)
        try refuseAnythingButARegularFile(path)
        try createIfMissing(path: path)
        options.protectFiles(path)  // the database, before SQLite writes to it
        var opened: Opened
        do {
            opened = try connect(path: path, options: options, readOnly: false)
        } catch let error as StoreError where isReasonToOpenForReading(error) {
            return try openForReading(path: path, options: options, because: error)
        }
        do {
            try openJournal(&opened, path: path, options: options, readOnly: false)
        } catch let error as StoreError where error.kind == .diskFull {
            // No room for a journal: the store can still be read. (Any other problem with the
            // journal is said when opening, never turned into a store that is silently read-only.)
            return try openForReading(path: path, options: options, because: error)
        }
        return opened
    }

    /// Whether a failure to open the file for writing leaves it worth opening for reading.
    private static func isReasonToOpenForReading(_ error: StoreError) -> Bool {
        error.kind == .cannotOpen || error.kind == .readOnly || error.kind == .diskFull
    }

    /// Opens a file this process may read but not write, for reading.
    ///
    /// A read-only file, folder or file system, or a full disk; every write then throws `.readOnly`. Where SQLite cannot even
    /// create its `-shm` file, only an immutable open can read it.
    private static func openForReading(path: String, options: Settings, because error: StoreError) throws
        -> Opened
    {
        for immutable in [false, true] {
            if var opened = try? connect(path: path, options: options, readOnly: true, immutable: immutable) {
                try openJournal(&opened, path: path, options: options, readOnly: true)
                return opened
            }
        }
        throw error
    }

    /// Refuses the names SQLite gives a meaning other than a file: `:memory:` and the empty name
    /// open a private database that keeps nothing (and `:memory:` would also leave a file of that
    /// name behind, since the store creates the file first).
    private static func refuseSpecialNames(_ path: String) throws {
        guard path.isEmpty || path == ":memory:" else { return }
        throw StoreError(
            path: path, kind: .cannotOpen,
            detail:
                "\(path.isEmpty ? "an empty path" : "':memory:'") names no file, and a SQLiteStore keeps its values in a file; use MemoryStore for values that live in memory only"
        )
    }

    private static func connect(path: String, options: Settings, readOnly: Bool, immutable: Bool = false)
        throws -> Opened
    {
        do {
            let connection = try SQLiteConnection(path: path, readOnly: readOnly, immutable: immutable)
            connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds)
            return try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                // Look before changing anything: a file that is refused is left exactly as it was.
                // (The first read also reads the header: a file that is not SQLite fails here.)
                try checkBelongsToPrefs(connection, path: path)
                // Asked for writing, SQLite reads a file it cannot write (a read-only file system
                // where its `-wal` and `-shm` were kept): the store opens it for reading.
                if !readOnly && connection.isReadOnly {
                    throw StoreError(path: path, kind: .readOnly, detail: "SQLite can only read the file")
                }
                if !readOnly {
                    if keepsJournalFiles(options) { connection.keepsJournalFilesWhenClosed() }
                    _ = try connection.text("PRAGMA journal_mode=WAL")
                    try configureForCheckpoints(connection, options: options)
                    try createSchema(connection, path: path)
                }
                let identity = readOnly ? try databaseID(connection) : try ensureDatabaseID(connection)
                var opened = try load(
                    connection, path: path, faults: options.faults, report: options.report)
                opened.databaseID = identity
                opened.database.readOnly = readOnly
                opened.database.immutable = immutable
                return opened
            }
        } catch let failure as SQLiteConnection.Failure {
            throw StoreError(path: path, failure)
        }
    }

    /// The connection only commits checkpoints: each reaches the medium before the journal
    /// drops what it moved, whatever the durability (`flush()` promises to survive power loss).
    private static func configureForCheckpoints(_ connection: SQLiteConnection, options: Settings) throws {
        try connection.execute("PRAGMA synchronous=FULL")
        // On Apple platforms `fsync` leaves data in the drive's cache; only `F_FULLFSYNC` reaches
        // the medium, and SQLite uses it only when asked. `.committed` too: the journal drops the
        // records a checkpoint moved, so a commit still in the drive's cache would lose them.
        // (Elsewhere these pragmas change nothing: one code path for every platform.)
        try connection.execute("PRAGMA fullfsync=ON; PRAGMA checkpoint_fullfsync=ON")
        // Where the `-wal` file is kept between connections (see ``keepsJournalFiles(_:)``), it
        // is emptied when a checkpoint resets it, so it never holds the last move's frames.
        if keepsJournalFiles(options) { try connection.execute("PRAGMA journal_size_limit=0") }
    }

    /// Whether `-wal` and `-shm` are kept between connections: where there is data protection.
    ///
    /// Made anew at each reopen, they would take their folder's protection class, which a
    /// folder of class `complete` refuses while the device is locked. Elsewhere they are made
    /// anew: keeping them cost about a tenth of a write (measured on Linux, checkpoints
    /// included), for nothing there. Tests keep them on Linux through the faults.
    static func keepsJournalFiles(_ options: Settings) -> Bool {
        options.faults.keepsJournalFiles ?? JournalError.platformProtectsFiles
    }

    /// A connection to a store's file that was opened before (schema checked, in WAL mode),
    /// configured for checkpoints as the first one was.
    static func checkpointConnection(path: String, options: Settings) throws -> SQLiteConnection {
        try checkpointConnection(path: path, options: options, readOnly: false, immutable: false)
    }

    /// The same for a store that only reads: opened as the first one was, with nothing to move.
    ///
    /// Configuring reads the schema, which waits for another connection's exclusive lock: in
    /// short steps, not SQLite's busy handler, ending (with SQLite's `SQLITE_BUSY`) once
    /// `giveUp` answers true (the system taking its background time back).
    static func checkpointConnection(
        path: String, options: Settings, readOnly: Bool, immutable: Bool, waitingAtMost wait: Duration? = nil,
        giveUpWhen giveUp: () -> Bool = { false }
    ) throws -> SQLiteConnection {
        if readOnly {
            let connection = try SQLiteConnection(path: path, readOnly: true, immutable: immutable)
            connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds)
            return connection
        }
        let connection = try SQLiteConnection(path: path, create: false)
        if keepsJournalFiles(options) { connection.keepsJournalFilesWhenClosed() }
        connection.setBusyTimeout(milliseconds: 0)
        try connection.retryingWhileBusy(timeout: wait ?? options.busyTimeout, givingUpWhen: giveUp) {
            try configureForCheckpoints(connection, options: options)
        }
        connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds)
        return connection
    }

    /// Opens the journal beside a loaded file: the cache then catches up with its records.
    static func openJournal(_ opened: inout Opened, path: String, options: Settings, readOnly: Bool) throws {
        try StoreError.fromJournal {
            try openJournalFile(&opened, path: path, options: options, readOnly: readOnly)
        }
    }

    private static func openJournalFile(
        _ opened: inout Opened, path: String, options: Settings, readOnly: Bool
    )
        throws
    {
        let journal = try Journal.open(
            databasePath: path, file: opened.database.file, writable: !readOnly,
            stored: opened.highestStored, databaseID: opened.databaseID, timeout: options.busyTimeout,
            reporter: options.report, lockedData: options.faults.lockedData ?? Journal.isDataLockedAway)
        // Taking the lock once repairs what a process killed while writing left behind.
        if let journal, journal.isWritable {
            if options.powerSafe { journal.noteAPowerSafeWriter() }
            // SQLite's mark is read holding the journal's lock (a checkpoint drops records only
            // under it, after its commit): the header's base can then be checked against it.
            let connection = opened.database.connection
            let checkpointed = {
                do { return try StoreConnection.checkpointedSequence(connection) } catch let failure
                    as SQLiteConnection.Failure
                { throw StoreError(path: path, failure) }
            }
            // Briefly: a writer stopped (not killed) while holding the lock must not keep others
            // from opening the store to read. Whatever is left to repair, the first write does.
            do {
                try journal.withLock(
                    timeout: min(options.busyTimeout, openingLockWait), checkingBaseAgainst: checkpointed
                ) { _ in }
            } catch let error as JournalError where error.kind == .busy {
                journal.report("another process holds the journal's lock; it is checked at the first write")
            }
        }
        // Every file of the store now exists: `-wal` and `-shm` (made with the folder's class)
        // and the journal get the store's.
        if let journal, journal.isWritable { options.protectFiles(path) }
        opened.journal = journal
        // A journal that starts after what was just loaded (a new one continues from the highest
        // number SQLite holds, which a first-release file has without a checkpoint mark): the
        // cache holds everything up to its start already.
        if let base = journal?.baseSequence, base > opened.cache.position.sequence,
            base <= opened.highestStored
        {
            opened.cache.position.sequence = base
        }
    }

    /// Refuses a symbolic link, a FIFO, a folder or a device at the path: the store never
    /// follows a link to write somewhere else, and never waits on a FIFO.
    private static func refuseAnythingButARegularFile(_ path: String) throws {
        guard let info = SystemCall.lstat(path) else { return }  // nothing there yet: it will be created
        guard let problem = FileKind.problem(mode: info.st_mode) else { return }
        throw StoreError(
            path: path, kind: .cannotOpen, detail: "\(problem); the store opens regular files only")
    }

    /// Creates the folders (owner only) and an empty file readable by its owner only (0600);
    /// SQLite gives its `-wal` and `-shm` files the same permissions.
    private static func createIfMissing(path: String) throws {
        let files = FileManager.default
        guard !files.fileExists(atPath: path) else { return }
        let folder = (path as NSString).deletingLastPathComponent
        do {
            if !folder.isEmpty {
                try files.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw StoreError(
                path: path, kind: .cannotOpen, detail: "cannot create its folder: \(plainReason(of: error))")
        }
        // Not `FileManager.createFile`: it writes a temporary file and renames it over the path, so
        // two processes creating the store at once could replace a file the other already uses.
        // `O_CREAT` without `O_TRUNC` creates the file or leaves an existing one alone.
        if let failure = createWithoutReplacing(path) {
            // A folder whose class keeps new files out while the device is locked (or before
            // its first unlock) refuses with `EPERM`: the data is unavailable, not the path.
            let locked = JournalError.isProtectedData(openFailure: failure.errno, path: path)
            throw StoreError(
                path: path, kind: locked ? .protectedDataUnavailable : .cannotOpen,
                detail: "cannot create the file: \(failure.reason)")
        }
    }

    /// The schema objects this release creates; any other (but SQLite's own `sqlite_…` tables)
    /// makes the file another program's. (`prefs_keys`, the key descriptions, is made by the first
    /// ``Preferences/publish(_:)``.)
    static let schemaObjects: Set<String> = [
        "prefs_entries", "prefs_entries_seq", "prefs_meta", "prefs_keys", "prefs_moved",
    ]

    /// Throws unless the file is empty or holds only a Prefs schema this release can read;
    /// only reads.
    private static func checkBelongsToPrefs(_ connection: SQLiteConnection, path: String) throws {
        var others: [String] = []
        try connection.run("SELECT name FROM sqlite_master") { row in
            let name = row.text(0)
            // Compared exactly in Swift: `LIKE` would treat `_` as a wildcard and ignore case.
            if !schemaObjects.contains(name) && !name.utf8.starts(with: "sqlite_".utf8) {
                others.append(name)
            }
        }
        guard others.isEmpty else {
            throw StoreError(
                path: path, kind: .foreignDatabase,
                detail: "it has \(others.sorted().map { String(reflecting: $0) }.joined(separator: ", "))")
        }
        let found = try connection.integer("PRAGMA user_version") ?? 0
        if found > schemaVersion {
            throw StoreError(
                path: path, kind: .newerSchema,
                detail: "schema version \(found); this release knows version \(schemaVersion)")
        }
    }

    /// The entries: a rowid table (see the migration from version 1 below for why).
    private static let entriesTable = """
        CREATE TABLE IF NOT EXISTS prefs_entries(key TEXT PRIMARY KEY NOT NULL, value BLOB, seq INTEGER NOT NULL);
        """

    /// The keys each checkpoint moved, a row per checkpoint (`batch`: the highest sequence number
    /// it moved; `keys`: ``StoreConnection/MovedKeys``): appended at the end, read by range, cut
    /// at the start.
    private static let movedTable = """
        CREATE TABLE IF NOT EXISTS prefs_moved(batch INTEGER PRIMARY KEY, keys BLOB NOT NULL);
        """

    private static func createSchema(_ connection: SQLiteConnection, path: String) throws {
        let found = try connection.integer("PRAGMA user_version") ?? 0
        guard found < schemaVersion else { return }
        // Two processes may open a new file at once: the write lock makes one create the schema.
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let version = try connection.integer("PRAGMA user_version") ?? 0
            if version == 1 {
                // Version 1 kept the entries WITHOUT ROWID, where a value over about 1,000 bytes
                // spills into an overflow page of its own (four times the space for 1 KB); a
                // rowid table keeps values up to about 4,000 bytes in its leaves. Its rows are
                // all "checkpointed" already.
                try connection.execute(
                    """
                    ALTER TABLE prefs_entries RENAME TO prefs_entries_v1;
                    \(entriesTable)
                    INSERT INTO prefs_entries(key, value, seq) SELECT key, value, seq FROM prefs_entries_v1;
                    DROP TABLE prefs_entries_v1;
                    """)
            }
            if version == 1 || version == 2 {
                // The list of moves starts now: a store behind this point catches up by reading
                // every row (as version 2 did through its index), one at or after it from the list.
                let checkpointed = try StoreConnection.checkpointedSequence(connection)
                let highest = try connection.integer("SELECT max(seq) FROM prefs_entries") ?? 0
                let start = max(checkpointed, UInt64(bitPattern: highest))
                try connection.execute(
                    """
                    DROP INDEX IF EXISTS prefs_entries_seq;
                    \(movedTable)
                    """)
                try StoreConnection.startListingMoves(at: start, in: connection)
                try connection.execute("PRAGMA user_version = \(schemaVersion)")
            } else if version == 0 {
                try checkBelongsToPrefs(connection, path: path)
                // A removal is kept as a row whose value is NULL, with the sequence number of the
                // write that made it, so other processes can catch up by sequence number alone.
                try connection.execute(
                    """
                    \(entriesTable)
                    \(movedTable)
                    CREATE TABLE IF NOT EXISTS prefs_meta(name TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
                    PRAGMA user_version = \(schemaVersion);
                    """)
                try StoreConnection.startListingMoves(at: 0, in: connection)
            }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Reads every row into the cache, and the checkpoint mark they go with, in one read
    /// transaction: a commit by another connection while loading is then either in the rows and
    /// the mark, or in neither (and found by the next catch-up).
    ///
    /// Reading every page of the table also finds damage in it.
    private static func load(
        _ connection: SQLiteConnection, path: String, faults: SQLiteStoreFaults,
        report: @escaping Journal.Reporter
    ) throws
        -> Opened
    {
        try connection.execute("BEGIN")
        defer { try? connection.execute("COMMIT") }
        // The first read starts the read transaction every row is read in.
        let version = try connection.integer("PRAGMA user_version") ?? 0
        guard version >= 1 && version <= schemaVersion else {
            // Only reachable read-only, where the schema could not be created or checked before.
            throw StoreError(
                path: path, kind: version > schemaVersion ? .newerSchema : .readOnly,
                detail: "schema version \(version), expected \(schemaVersion)")
        }
        // Room for every row at once: growing a large table step by step copies it each time.
        // The largest rowid counts the rows (or a few more, after removals) without a scan; a
        // first-release table has no rowid, and reserves nothing.
        let rows = (try? connection.integer("SELECT max(rowid) FROM prefs_entries")).flatMap { $0 } ?? 0
        let fileBytes =
            (try? connection.integer(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")).flatMap { $0 }
            ?? 0
        // A row takes at least 16 bytes of the file, so a damaged largest rowid (or one counting
        // many removals) never reserves more than the file could hold; on a watch (32-bit `Int`)
        // at most 65,536 entries up front: the table grows past that by itself, and a larger
        // reservation (10 million entries were 400 MB) would end a watch app or a widget.
        let mostRows: Int64 = Int.bitWidth == 32 ? 1 << 16 : 10_000_000
        var values = KeyTable(minimumCapacity: Int(clamping: min(max(rows, 0), fileBytes / 16, mostRows)))
        // The values' bytes fit in the file: reserving that much address space (touched only as
        // it fills) spares copying the buffer each time it would double.
        // At most 256 MiB, and 32 MiB where Int has 32 bits (a watch's address space is small).
        let largestReservation: Int64 = Int.bitWidth == 32 ? 1 << 25 : 1 << 28
        values.reserveEncodedCapacity(Int(clamping: min(max(fileBytes, 0), largestReservation)))
        // The journal's records after the checkpointed sequence number are not in SQLite yet.
        let checkpointed = try StoreConnection.checkpointedSequence(connection)
        var highestRow: UInt64 = 0
        // SQLite reads the rows here while another thread builds the cache from them. (The
        // table is consumed, not copied: the fill holds its only reference.)
        let fill = ParallelTableFill(consume values)
        try connection.run("SELECT key, value, seq FROM prefs_entries") { row in
            highestRow = max(highestRow, UInt64(bitPattern: row.integer(2)))
            guard !row.isNull(1) else { return }
            fill.add(key: row.textBytes(0), value: row.blobBytes(1))
        }
        let (filled, undecodable) = fill.finish()
        faults.afterLoadingRows?()
        // Left in the file untouched; reads see no value for these keys.
        reportUndecodable(undecodable, in: path, to: report)
        return Opened(
            database: Database(
                connection: connection, file: FileIdentity(path: path)),
            cache: Cache(
                values: filled,
                position: Journal.Position(
                    sequence: checkpointed, generation: .max, offset: Journal.Layout.headerSize)),
            journal: nil, recovery: nil, highestStored: max(checkpointed, highestRow))
    }

    /// Says which keys hold values this release cannot decode (a newer release's), to the
    /// store's diagnostics.
    ///
    /// Those values are ignored, never fatal, never taken for removals. Nothing is said when
    /// there are none.
    static func reportUndecodable(
        _ keys: some Collection<String>, in path: String, to report: Journal.Reporter
    ) {
        guard !keys.isEmpty else { return }
        report(path, "cannot decode the values of \(keys.sorted()); ignoring them")
    }

    /// Moves a damaged file (and its `-wal`, `-shm` and `-prefs` companions) to `<name>.corrupt-<timestamp>`.
    private static func moveAside(path: String, because error: StoreError) throws -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        var destination = "\(path).corrupt-\(formatter.string(from: Date()))"
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination) {
            attempt += 1
            destination = "\(path).corrupt-\(formatter.string(from: Date()))-\(attempt)"
        }
        do {
            try FileManager.default.moveItem(atPath: path, toPath: destination)
            for suffix in ["-wal", "-shm", "-prefs"]
            where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.moveItem(atPath: path + suffix, toPath: destination + suffix)
            }
        } catch let moveError {
            throw StoreError(
                kind: error.kind, store: path,
                message: "\(error.message); and it could not be moved aside: \(plainReason(of: moveError))")
        }
        return destination
    }
}

/// Creates `path` (owner read and write only) unless it exists; returns why it failed (the
/// system's code and its reason in words), or `nil`.
private func createWithoutReplacing(_ path: String) -> (errno: Int32, reason: String)? {
    let descriptor = SystemCall.open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
    guard descriptor >= 0 else {
        let code = errno
        return (code, JournalError.systemReason(code))
    }
    SystemCall.close(descriptor)
    return nil
}
