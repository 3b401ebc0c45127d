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
    static func open(databasePath: String, file: FileIdentity?, writable: Bool, stored: UInt64) throws
        -> Journal?
    {
        let path = databasePath + "-prefs"
        var descriptor: Int32 = -1
        var isWritable = writable
        if writable { descriptor = Foundation.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        if descriptor < 0 {
            isWritable = false
            descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        }
        func failure(_ kind: SQLiteStoreError.Kind, _ detail: String) -> SQLiteStoreError {
            SQLiteStoreError(path: databasePath, kind: kind, detail: detail)
        }
        guard descriptor >= 0 else {
            if !writable { return nil }
            throw failure(.cannotOpen, "cannot open the journal \(path): \(String(cString: strerror(errno)))")
        }
        var keep = false
        defer { if !keep { close(descriptor) } }
        // Opening is serialized, so one process creates or repairs the header while the others
        // wait for it.
        if isWritable { prefs_open_begin(descriptor) }
        defer { if isWritable { prefs_open_end(descriptor) } }
        let isSoleUser = isWritable && prefs_open_is_sole_user(descriptor) == 1
        var head = [UInt8](repeating: 0, count: 16)
        let count = pread(descriptor, &head, 16, 0)
        let magic = Array(head.prefix(8))
        let isNew = count <= 0 || magic.allSatisfy { $0 == 0 } || magic == Layout.signalMagic
        if !isNew && magic != Layout.magic {
            guard writable else { return nil }
            throw failure(.foreignDatabase, "\(path) is not a Prefs journal; it was left untouched")
        }
        let version = head[8..<12].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        if !isNew && version > Layout.version {
            throw failure(
                .newerSchema(found: Int(version)),
                "\(path) has journal format \(version); this release knows \(Layout.version)")
        }
        if isNew && !isWritable { return nil }
        let protection = isWritable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let mapping = mmap(nil, Layout.reservation, protection, MAP_SHARED, descriptor, 0),
            mapping != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED, spelled the same everywhere
        else {
            throw failure(.cannotOpen, "cannot map the journal \(path): \(String(cString: strerror(errno)))")
        }
        let journal = Journal(
            databasePath: databasePath, path: path, descriptor: descriptor, mapping: mapping,
            isWritable: isWritable,
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
            if isSoleUser {
                // Nobody else has the journal open: whatever state the lock was left in (a dead
                // holder's, or damage), it is made anew.
                _ = prefs_lock_init(mapping + Layout.lockOffset)
            } else if prefs_lock_is_sane(mapping + Layout.lockOffset) == 0 {
                // Damaged into something no writer made: any process using it would fail too.
                _ = prefs_lock_init(mapping + Layout.lockOffset)
                journal.report("its lock was damaged; it was made anew")
            }
            if let lie = journal.headerProblem() {
                if journal.sequence >= Layout.sequenceLimit || journal.baseSequence >= Layout.sequenceLimit {
                    // Numbers no write made: start again from the records' own.
                    journal.set(Layout.sequenceOffset, UInt64(0))
                    journal.set(Layout.baseOffset, UInt64(0))
                }
                journal.repair(reason: "its header \(lie)")
            }
            // Records are numbered after everything SQLite holds (a journal behind it would
            // number new records below the checkpointed mark, and they would never be moved).
            if journal.sequence < stored { journal.set(Layout.sequenceOffset, stored) }
        }
        return journal
    }

    /// Writes a new header (the file holds no records worth keeping).
    private func create(continuingFrom stored: UInt64) throws {
        // Grown before the header is written: every page the mapping touches then exists.
        guard ftruncate(descriptor, 0) == 0 else {
            throw error(.cannotOpen, "cannot create the journal \(path): \(String(cString: strerror(errno)))")
        }
        let size = Layout.headerSize + Layout.growthStep
        do { try extendFile(from: 0, to: size) } catch let failure as SQLiteStoreError {
            // Leave no half-made journal behind: the next opener starts again.
            _ = ftruncate(descriptor, 0)
            throw failure
        }
        memset(mapping, 0, Layout.headerSize)
        let failure = prefs_lock_init(mapping + Layout.lockOffset)
        guard failure == 0 else {
            throw error(.cannotOpen, "cannot make the journal lock: \(String(cString: strerror(failure)))")
        }
        word32(Layout.versionOffset).pointee = Layout.version
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
