import CPrefsShared
import Foundation
import PrefsSupport

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
        timeout: Duration, reporter: @escaping Reporter,
        lockedData: @escaping LockedDataProbe = Journal.isDataLockedAway
    ) throws -> Journal? {
        // A few times at most: a file at the path that is no journal (or another database's) is
        // moved aside once, and an opener that waited while another moved it opens again.
        for _ in 0..<4 {
            switch try openOnce(
                databasePath: databasePath, file: file, writable: writable, stored: stored,
                databaseID: databaseID, timeout: timeout, reporter: reporter, lockedData: lockedData)
            {
            case .opened(let journal): return journal
            case .movedAside: continue
            }
        }
        throw JournalError(
            .cannotOpen, path: databasePath,
            "no journal could be made at \(databasePath)-prefs"
        )
    }

    private enum Opening {
        case opened(Journal?)
        /// What was at the path was moved aside: open again.
        case movedAside
    }

    private static func openOnce(
        databasePath: String, file: FileIdentity?, writable: Bool, stored: UInt64, databaseID: UInt64?,
        timeout: Duration, reporter: @escaping Reporter, lockedData: @escaping LockedDataProbe
    ) throws -> Opening {
        let path = databasePath + "-prefs"
        func failure(_ kind: JournalError.Kind, _ message: String) -> JournalError {
            JournalError(kind, path: databasePath, message)
        }
        guard let opened = try OpenedFile.open(path, databasePath: databasePath, writable: writable) else {
            return .opened(nil)
        }
        let descriptor = opened.descriptor
        let isWritable = opened.isWritable
        var keep = false
        defer { if !keep { SystemCall.close(descriptor) } }
        guard let threadLock = ThreadLock.forFile(FileIdentity(descriptor: descriptor)) else {
            throw failure(.cannotOpen, "cannot make the journal's thread lock for \(path)")
        }
        // Opening is serialized, so one process creates or repairs the header while the others
        // wait for it. Briefly: on Apple platforms (and under `PREFS_JOURNAL_LOCK=flock`) the
        // opening lock is the journal's own, which a writer holds while it appends, and a writer
        // stopped in a debugger must not make opening (often on the main thread, at launch)
        // wait the busy timeout. Past ``openingLockWait`` a journal whose header is whole opens
        // without it, repairing nothing (the first write checks the journal under the lock);
        // only a header being made or repaired is waited for, up to the busy timeout.
        let briefly = min(timeout, Self.openingLockWait)
        var holdsOpeningLock = false
        if isWritable {
            holdsOpeningLock = try beginOpening(
                descriptor, threadLock, timeout: briefly, path: path, failure: failure)
        }
        // Once mapped, the journal owns the descriptor and closes it when released: it is kept
        // until the opening lock has ended, or a failed create would end the lock on a number
        // another thread may already have opened (and release that file's lock).
        var mapped: Journal?
        defer {
            if holdsOpeningLock { prefs_open_end(descriptor, threadLock.pointer) }
            withExtendedLifetime(mapped) {}
        }
        // Another opener may have moved the file aside while this one waited: open what is at
        // the path now.
        if isWritable && FileIdentity(descriptor: descriptor) != FileIdentity(path: path) {
            return .movedAside
        }
        var head = Head(reading: descriptor)
        var verdict = try head.verdict(
            fileSize: opened.size, writable: writable, isWritable: isWritable, path: path)
        if isWritable && !holdsOpeningLock && !head.opensWithoutTheLock(verdict, databaseID: databaseID) {
            guard
                try beginOpening(
                    descriptor, threadLock, timeout: timeout - briefly, path: path, failure: failure)
            else {
                throw failure(
                    .busy, "another process held the journal \(path) longer than \(timeout) while opening it")
            }
            holdsOpeningLock = true
            if FileIdentity(descriptor: descriptor) != FileIdentity(path: path) { return .movedAside }
            head = Head(reading: descriptor)
            verdict = try head.verdict(
                fileSize: OpenedFile.size(of: descriptor), writable: writable, isWritable: isWritable,
                path: path)
        }
        let isSoleUser = holdsOpeningLock && prefs_open_is_sole_user(descriptor) == 1
        switch verdict {
        case .unreadable:
            try moveAside(
                path, as: "unreadable", because: "it has no journal header", failure: failure,
                reporter: reporter)
            return .movedAside
        case .notOurs: return .opened(nil)
        case .new where !isWritable: return .opened(nil)
        case .journal where head.belongsToAnotherDatabase(than: databaseID):
            // Another database's journal (this one was deleted and made anew): never replayed
            // into it. Kept aside, whole, for whoever wants the deleted store's last writes.
            guard isWritable else { return .opened(nil) }
            try moveAside(
                path, as: "other-database", because: "it belongs to another database than \(databasePath)",
                failure: failure, reporter: reporter)
            return .movedAside
        case .new, .journal: break
        }
        let isNew = head.verdictIsNew
        let lockKind = try chooseLockKind(
            found: isNew ? nil : head.lockKind, isSoleUser: isSoleUser, path: path, failure: failure)
        let journal = try map(
            opened, path: path, databasePath: databasePath, lock: lockKind, threadLock: threadLock,
            file: file, reporter: reporter, lockedData: lockedData)
        mapped = journal
        keep = true
        if isNew {
            try journal.create(continuingFrom: stored)
        } else if holdsOpeningLock {
            try journal.checkExisting(isSoleUser: isSoleUser, stored: stored)
        }
        if holdsOpeningLock, let databaseID { journal.recordIdentity(databaseID) }
        return .opened(journal)
    }

    /// Maps the opened file and makes the journal object.
    private static func map(
        _ opened: OpenedFile, path: String, databasePath: String, lock kind: Int32, threadLock: ThreadLock,
        file: FileIdentity?, reporter: @escaping Reporter, lockedData: @escaping LockedDataProbe
    ) throws -> Journal {
        guard
            let mapping = SystemCall.mapShared(
                opened.descriptor, count: Layout.reservation, writable: opened.isWritable)
        else {
            throw JournalError(
                .cannotOpen, path: databasePath, failedTo: "map the journal \(path)", errno: errno)
        }
        let lock = JournalLock(
            kind: kind, memory: mapping + Layout.lockOffset, thread: threadLock, descriptor: opened.descriptor
        )
        return Journal(
            databasePath: databasePath, path: path, descriptor: opened.descriptor, mapping: mapping,
            isWritable: opened.isWritable, lock: lock, reporter: reporter, file: file, lockedData: lockedData)
    }

    /// Writes the database's identity in both of its places: a copy damaged by a flipped bit is
    /// made whole again (and said), and a journal made before the copy gets one.
    private func recordIdentity(_ databaseID: UInt64) {
        let copies = [field(Layout.databaseIDOffset), field(Layout.databaseIDCopyOffset)]
        guard copies != [databaseID, databaseID] else { return }
        if copies.contains(where: { $0 != 0 && $0 != databaseID }) {
            report("a copy of its database identity was damaged; it was made whole again")
        }
        set(Layout.databaseIDOffset, databaseID)
        set(Layout.databaseIDCopyOffset, databaseID)
    }

    /// Makes an existing journal ready to write: grown when cut shorter than its first page, its
    /// lock checked, a header that lies repaired, its numbers after everything SQLite holds.
    private func checkExisting(isSoleUser: Bool, stored: UInt64) throws {
        if actualFileSize() < Layout.headerSize + Layout.growthStep {
            // Shorter than its header (cut short): grown first, with zeros. Growing a file later
            // would zero the rest of its last page under the mapping, lock and all.
            try extendFile(from: actualFileSize(), to: Layout.headerSize + Layout.growthStep)
        }
        try prepareLock(isSoleUser: isSoleUser)
        let baseLied = trustNoBaseAboveTheRecords()
        if let lie = headerProblem() ?? (baseLied ? "had a base sequence number above the last one" : nil) {
            if sequence >= Layout.sequenceLimit || baseSequence >= Layout.sequenceLimit {
                // Numbers no write made: start again from the records' own.
                set(Layout.sequenceOffset, UInt64(0))
                set(Layout.baseOffset, UInt64(0))
            }
            repair(reason: "its header \(lie)", held: .whileOpening(self))
        }
        // Records are numbered after everything SQLite holds (a journal behind it would number
        // new records below the checkpointed mark, and they would never be moved).
        if sequence < stored { set(Layout.sequenceOffset, stored) }
    }

    /// Lowers a base sequence number above the last record's number to where the records start.
    ///
    /// No write makes the base pass the sequence number (records are moved, and the base set to
    /// what was moved, only below it), so such a base is damage (a flipped bit), and a walk that
    /// trusted it would take every record for one already moved and cut them all. The records
    /// say where they start: the base goes just below the first one (to the sequence number when
    /// there is none). A base damaged below the sequence number is caught at the first lock,
    /// against SQLite's checkpoint mark read under that lock (`withLock(checkingBaseAgainst:)`):
    /// compared here, without the lock, with what SQLite held when the store loaded, a
    /// checkpoint committed since by another store would look like damage.
    ///
    /// Returns whether it did (the records are then walked again, the sequence number with them).
    private func trustNoBaseAboveTheRecords() -> Bool {
        guard baseSequence > sequence else { return false }
        var scan = RecordScan(journal: self, from: Layout.headerSize, to: actualFileSize(), after: 0)
        let base = scan.next() != nil ? scan.lastSequence - 1 : sequence
        report(
            "its header says records up to \(baseSequence) were moved, past the last record, \(sequence); the records are kept from \(base + 1)"
        )
        set(Layout.baseOffset, base)
        return true
    }

    /// The longest opening waits for the opening lock before it opens a whole journal without it
    /// (`DurabilityAndProcesses` promises it).
    static let openingLockWait = Duration.milliseconds(200)

    /// Takes the opening lock (see `prefs_open_begin`), waiting at most `timeout`; false when
    /// another process held it all that time.
    private static func beginOpening(
        _ descriptor: Int32, _ threadLock: ThreadLock, timeout: Duration, path: String,
        failure: (JournalError.Kind, String) -> JournalError
    ) throws -> Bool {
        switch prefs_open_begin(descriptor, threadLock.pointer, Int64(max(0, timeout.wholeMilliseconds))) {
        case Int32(PREFS_LOCK_ACQUIRED): return true
        case Int32(PREFS_LOCK_TIMED_OUT): return false
        case Int32(PREFS_LOCK_WOULD_DEADLOCK):
            throw failure(
                .deadlock,
                "this thread holds the journal lock of \(path) (inside a transaction on a store of the same file): opening another store of it would wait for itself"
            )
        default:
            throw failure(
                .cannotOpen,
                "cannot lock the journal \(path) to open it: \(JournalError.systemReason(errno))")
        }
    }

    /// The lock kind to use: the one the header names, so every process uses the same; this
    /// process's own for a new journal, or when nobody else has the file open.
    private static func chooseLockKind(
        found: Int32?, isSoleUser: Bool, path: String,
        failure: (JournalError.Kind, String) -> JournalError
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
        guard SystemCall.ftruncate(descriptor, 0) else {
            throw JournalError(
                .cannotOpen, path: databasePath, failedTo: "create the journal \(path)", errno: errno)
        }
        let size = Layout.headerSize + Layout.growthStep
        do { try extendFile(from: 0, to: size) } catch let failure as JournalError {
            // Leave no half-made journal behind: the next opener starts again.
            _ = SystemCall.ftruncate(descriptor, 0)
            throw failure
        }
        memset(mapping, 0, Layout.headerSize)
        if lock.kind == Int32(PREFS_LOCK_KIND_NATIVE) {
            #if os(Linux)
                let failure = prefs_lock_init(mapping + Layout.lockOffset)
                guard failure == 0 else {
                    throw JournalError(
                        .cannotOpen, path: databasePath, failedTo: "make the journal lock",
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
