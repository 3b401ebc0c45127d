import CPrefsShared
import Foundation

/// Opening: creating the journal, replacing the older signal-only file, checking the header.
extension Journal {
    // MARK: - Opening

    /// Opens `<databasePath>-prefs`, creating it (or replacing the older signal-only file) when
    /// needed; checks the header and repairs a journal whose header lies.
    ///
    /// `stored` is the highest sequence number SQLite holds: a new journal continues from it.
    /// Returns `nil` when the store is read-only and no journal can be read.
    static func open(
        databasePath: String, file: FileIdentity?, writable: Bool, stored: UInt64, databaseID: UInt64?,
        timeout: Duration
    ) throws -> Journal? {
        // A few times at most: a file at the path that is no journal (or another database's) is
        // moved aside once, and an opener that waited while another moved it opens again.
        for _ in 0..<4 {
            switch try openOnce(
                databasePath: databasePath, file: file, writable: writable, stored: stored,
                databaseID: databaseID, timeout: timeout)
            {
            case .opened(let journal): return journal
            case .movedAside: continue
            }
        }
        throw SQLiteStoreError(
            path: databasePath, kind: .cannotOpen, detail: "no journal could be made at \(databasePath)-prefs"
        )
    }

    private enum Opening {
        case opened(Journal?)
        /// What was at the path was moved aside: open again.
        case movedAside
    }

    private static func openOnce(
        databasePath: String, file: FileIdentity?, writable: Bool, stored: UInt64, databaseID: UInt64?,
        timeout: Duration
    ) throws -> Opening {
        let path = databasePath + "-prefs"
        func failure(_ kind: SQLiteStoreError.Kind, _ detail: String) -> SQLiteStoreError {
            SQLiteStoreError(path: databasePath, kind: kind, detail: detail)
        }
        // Never through a symbolic link (its target would be taken for a journal), and never
        // waiting on a FIFO: what is there is looked at before anything is read.
        let flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        var descriptor: Int32 = -1
        var isWritable = writable
        var created = false
        if writable {
            descriptor = Foundation.open(path, O_RDWR | O_CREAT | O_EXCL | flags, 0o600)
            created = descriptor >= 0
            if !created && errno == EEXIST { descriptor = Foundation.open(path, O_RDWR | flags) }
        }
        let writeFailure = writable ? errno : 0
        if descriptor < 0 && writeFailure != ELOOP {
            isWritable = false
            descriptor = Foundation.open(path, O_RDONLY | flags)
        }
        guard descriptor >= 0 else {
            if errno == ELOOP || writeFailure == ELOOP {
                throw failure(
                    .cannotOpen, "the journal \(path): it is a symbolic link; refused, never followed")
            }
            let reason = errno
            if let kind = SQLiteStore.FileProtection.kind(ofOpenFailure: reason) {
                throw failure(
                    kind, "the journal \(path) cannot be opened before the device is first unlocked")
            }
            if !writable { return .opened(nil) }
            throw SQLiteStoreError(
                path: databasePath, kind: .cannotOpen, failedTo: "open the journal \(path)", errno: reason)
        }
        var info = stat()
        if fstat(descriptor, &info) == 0, let problem = FileKind.problem(mode: info.st_mode) {
            close(descriptor)
            throw failure(.cannotOpen, "the journal \(path): \(problem); a journal must be a regular file")
        }
        if writable && !isWritable && writeFailure != 0 {
            // The database may be written but its journal may not (another user made it): say so
            // now, not with a store that turns out read-only at the first write.
            close(descriptor)
            throw failure(
                .cannotOpen,
                "the journal \(path) belongs to user \(info.st_uid) with mode \(String(info.st_mode & 0o777, radix: 8)), and this process (user \(geteuid())) cannot write it: \(SQLiteStoreError.systemReason(writeFailure))"
            )
        }
        if created { adoptDatabaseOwnership(descriptor, databasePath: databasePath) }
        var keep = false
        defer { if !keep { close(descriptor) } }
        guard let threadLock = ThreadLock.forFile(FileIdentity(descriptor: descriptor)) else {
            throw failure(.cannotOpen, "cannot make the journal's thread lock for \(path)")
        }
        // Opening is serialized, so one process creates or repairs the header while the others
        // wait for it (at most the store's busy timeout).
        if isWritable {
            try beginOpening(descriptor, threadLock, timeout: timeout, path: path, failure: failure)
        }
        defer { if isWritable { prefs_open_end(descriptor, threadLock.pointer) } }
        // Another opener may have moved the file aside while this one waited: open what is at
        // the path now.
        if isWritable && FileIdentity(descriptor: descriptor) != FileIdentity(path: path) {
            return .movedAside
        }
        let isSoleUser = isWritable && prefs_open_is_sole_user(descriptor) == 1
        var head = [UInt8](repeating: 0, count: Layout.headerSize + Layout.growthStep)
        let count = pread(descriptor, &head, head.count, 0)
        let magic = Array(head.prefix(8))
        let unused = count <= 0 || magic == Layout.signalMagic
        if !unused && magic.allSatisfy({ $0 == 0 }) && isWritable
            && !isUnfinishedJournal(head[..<max(count, 0)], size: Int(info.st_size))
        {
            // No magic, yet more than an unfinished journal holds: a journal whose header page a
            // power loss lost (its records cannot be trusted), or not a journal at all. Either
            // way it is kept, under another name, and a new journal is made.
            try moveAside(path, as: "unreadable", because: "it has no journal header", failure: failure)
            return .movedAside
        }
        let isNew = unused || magic.allSatisfy { $0 == 0 }
        if !isNew && magic != Layout.magic {
            guard writable else { return .opened(nil) }
            throw failure(.foreignDatabase, "\(path) is not a Prefs journal; it was left untouched")
        }
        func field64(_ offset: Int) -> UInt64 {
            guard count >= offset + 8 else { return 0 }
            return head[offset..<offset + 8].withUnsafeBytes {
                UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
            }
        }
        func field(_ offset: Int) -> UInt32 {
            guard count >= offset + 4 else { return 0 }
            return head[offset..<offset + 4].withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))
            }
        }
        let version = field(Layout.versionOffset)
        if !isNew && version > Layout.version {
            throw failure(
                .newerSchema(found: Int(version)),
                "\(path) has journal format \(version); this release knows \(Layout.version)")
        }
        if isNew && !isWritable { return .opened(nil) }
        let owner = isNew ? 0 : field64(Layout.databaseIDOffset)
        if let databaseID, owner != 0, owner != databaseID {
            // Another database's journal (this one was deleted and made anew): never replayed
            // into it. Kept aside, whole, for whoever wants the deleted store's last writes.
            guard isWritable else { return .opened(nil) }
            try moveAside(
                path, as: "other-database", because: "it belongs to another database than \(databasePath)",
                failure: failure)
            return .movedAside
        }
        let lockKind = try chooseLockKind(
            found: isNew ? nil : Int32(bitPattern: field(Layout.lockKindOffset)), isSoleUser: isSoleUser,
            path: path, failure: failure)
        let protection = isWritable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let mapping = mmap(nil, Layout.reservation, protection, MAP_SHARED, descriptor, 0),
            mapping != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED, spelled the same everywhere
        else {
            throw SQLiteStoreError(
                path: databasePath, kind: .cannotOpen, failedTo: "map the journal \(path)", errno: errno)
        }
        let journal = Journal(
            databasePath: databasePath, path: path, descriptor: descriptor, mapping: mapping,
            isWritable: isWritable,
            lock: JournalLock(
                kind: lockKind, memory: mapping + Layout.lockOffset, thread: threadLock,
                descriptor: descriptor),
            file: file)
        keep = true
        if !isNew && isWritable && journal.actualFileSize() < Layout.headerSize + Layout.growthStep {
            // Shorter than its header (cut short): grown first, with zeros. Growing a file later
            // would zero the rest of its last page under the mapping, lock and all.
            try journal.extendFile(from: journal.actualFileSize(), to: Layout.headerSize + Layout.growthStep)
        }
        if isNew {
            try journal.create(continuingFrom: stored)
        } else if isWritable {
            try journal.prepareLock(isSoleUser: isSoleUser)
            if let lie = journal.headerProblem() {
                if journal.sequence >= Layout.sequenceLimit || journal.baseSequence >= Layout.sequenceLimit {
                    // Numbers no write made: start again from the records' own.
                    journal.set(Layout.sequenceOffset, UInt64(0))
                    journal.set(Layout.baseOffset, UInt64(0))
                }

                journal.repair(reason: "its header \(lie)", held: .whileOpening(journal))
            }
            // Records are numbered after everything SQLite holds (a journal behind it would
            // number new records below the checkpointed mark, and they would never be moved).
            if journal.sequence < stored { journal.set(Layout.sequenceOffset, stored) }
        }
        if isWritable, let databaseID { journal.set(Layout.databaseIDOffset, databaseID) }
        return .opened(journal)
    }

    /// Renames the file at `path` to `<path>.<label>-<time>-<pid>` and says why on stderr.
    private static func moveAside(
        _ path: String, as label: String, because reason: String,
        failure: (SQLiteStoreError.Kind, String) -> SQLiteStoreError
    ) throws {
        let aside = "\(path).\(label)-\(Int(Date().timeIntervalSince1970))-\(getpid())"
        guard rename(path, aside) == 0 else {
            throw failure(
                .foreignDatabase,
                "\(path): \(reason), and it cannot be moved aside: \(SQLiteStoreError.systemReason(errno))")
        }
        report(path: path, "\(reason); it was moved to \(aside) and a new journal made")
    }

    /// Whether a file whose magic is zero is a journal whose creation stopped early.
    ///
    /// Such a file may be made anew: its magic was not written yet, and it has nothing past the header's fields, and no larger than a
    /// new journal. Anything else is another file, and is never truncated.
    private static func isUnfinishedJournal(_ start: ArraySlice<UInt8>, size: Int) -> Bool {
        size <= Layout.headerSize + Layout.growthStep
            && start.dropFirst(Layout.fieldsSize).allSatisfy { $0 == 0 }
    }

    /// Gives a journal this process just created the database file's owner and mode, as SQLite
    /// does for its `-wal` and `-shm` (root writing a user's store must not leave a journal the
    /// user cannot write), and syncs the folder so a power loss cannot lose the file's name.
    private static func adoptDatabaseOwnership(_ descriptor: Int32, databasePath: String) {
        var database = stat()
        if stat(databasePath, &database) == 0 {
            _ = fchmod(descriptor, database.st_mode & 0o666)
            if geteuid() == 0 { _ = fchown(descriptor, database.st_uid, database.st_gid) }
        }
        let folder = (databasePath as NSString).deletingLastPathComponent
        let folderDescriptor = Foundation.open(folder.isEmpty ? "." : folder, O_RDONLY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    /// Takes the opening lock (see `prefs_open_begin`), waiting at most `timeout`.
    private static func beginOpening(
        _ descriptor: Int32, _ threadLock: ThreadLock, timeout: Duration, path: String,
        failure: (SQLiteStoreError.Kind, String) -> SQLiteStoreError
    ) throws {
        switch prefs_open_begin(descriptor, threadLock.pointer, Int64(timeout.wholeMilliseconds)) {
        case Int32(PREFS_LOCK_ACQUIRED): return
        case Int32(PREFS_LOCK_TIMED_OUT):
            throw failure(
                .busy, "another process held the journal \(path) longer than \(timeout) while opening it")
        case Int32(PREFS_LOCK_WOULD_DEADLOCK):
            throw failure(
                .deadlock,
                "this thread holds the journal lock of \(path) (inside a transaction on a store of the same file): opening another store of it would wait for itself"
            )
        default:
            throw failure(
                .cannotOpen,
                "cannot lock the journal \(path) to open it: \(SQLiteStoreError.systemReason(errno))")
        }
    }

    /// The lock kind to use: the one the header names, so every process uses the same; this
    /// process's own for a new journal, or when nobody else has the file open.
    private static func chooseLockKind(
        found: Int32?, isSoleUser: Bool, path: String,
        failure: (SQLiteStoreError.Kind, String) -> SQLiteStoreError
    ) throws -> Int32 {
        let wanted = JournalLock.processKind
        guard let found, found != wanted, !isSoleUser else { return wanted }
        guard prefs_lock_kind_is_available(found) != 0 else {
            throw failure(.cannotOpen, "\(path) names a journal lock (\(found)) this platform does not have")
        }
        #if canImport(Darwin)
            return found  // both kinds are flock here
        #else
            throw failure(
                .cannotOpen,
                "the other users of \(path) lock it with \(JournalLock.name(of: found)), and this process with \(JournalLock.name(of: wanted)) (PREFS_JOURNAL_LOCK): every process of a store must use the same lock"
            )
        #endif
    }

    /// Records the lock kind in the header and makes the mutex anew where it may be stale.
    private func prepareLock(isSoleUser: Bool) throws {
        let recorded = word32(Layout.lockKindOffset)
        if isSoleUser && recorded.pointee != UInt32(bitPattern: lock.kind) {
            recorded.pointee = UInt32(bitPattern: lock.kind)
        }
        guard lock.kind == Int32(PREFS_LOCK_KIND_NATIVE), prefs_lock_kind_is_available(lock.kind) != 0 else {
            return
        }
        #if os(Linux)
            if isSoleUser {
                // Nobody else has the journal open: whatever state the lock was left in (a dead
                // holder's, or damage), it is made anew.
                _ = prefs_lock_init(mapping + Layout.lockOffset)
            } else if prefs_lock_is_sane(mapping + Layout.lockOffset) == 0 {
                // Damaged into something no writer made: any process using it would fail too.
                _ = prefs_lock_init(mapping + Layout.lockOffset)
                report("its lock was damaged; it was made anew")
            }
        #endif
    }

    /// Writes a new header (the file holds no records worth keeping).
    private func create(continuingFrom stored: UInt64) throws {
        // Grown before the header is written: every page the mapping touches then exists.
        guard ftruncate(descriptor, 0) == 0 else {
            throw SQLiteStoreError(
                path: databasePath, kind: .cannotOpen, failedTo: "create the journal \(path)", errno: errno)
        }
        let size = Layout.headerSize + Layout.growthStep
        do { try extendFile(from: 0, to: size) } catch let failure as SQLiteStoreError {
            // Leave no half-made journal behind: the next opener starts again.
            _ = ftruncate(descriptor, 0)
            throw failure
        }
        memset(mapping, 0, Layout.headerSize)
        if lock.kind == Int32(PREFS_LOCK_KIND_NATIVE) {
            #if os(Linux)
                let failure = prefs_lock_init(mapping + Layout.lockOffset)
                guard failure == 0 else {
                    throw SQLiteStoreError(
                        path: databasePath, kind: .cannotOpen, failedTo: "make the journal lock",
                        errno: failure)
                }
            #endif
        }
        word32(Layout.versionOffset).pointee = Layout.version
        word32(Layout.lockKindOffset).pointee = UInt32(bitPattern: lock.kind)
        set(Layout.sequenceOffset, stored)
        set(Layout.baseOffset, stored)
        set(Layout.writeOffsetOffset, Layout.headerSize)
        set(Layout.fileSizeOffset, size)
        prefs_atomic_fence()
        // The magic last: a journal with it has a whole header.
        Layout.magic.withUnsafeBytes { mapping.copyMemory(from: $0.baseAddress!, byteCount: 8) }
    }

    /// What is wrong with the header, or `nil` when it is consistent with itself and the file.
    private func headerProblem() -> String? {
        let actual = actualFileSize()
        if word32(Layout.versionOffset).pointee != Layout.version { return "has an unknown version" }
        if fileSize < Layout.headerSize || fileSize > actual {
            return "says the file holds \(fileSize) bytes, and it holds \(actual)"
        }
        if writeOffset < Layout.headerSize || writeOffset > fileSize {
            return "says the records end at byte \(writeOffset), outside the file"
        }
        if baseSequence > sequence { return "has a base sequence number above the last one" }

        if sequence >= Layout.sequenceLimit { return "has an impossible sequence number \(sequence)" }
        return nil
    }
}
