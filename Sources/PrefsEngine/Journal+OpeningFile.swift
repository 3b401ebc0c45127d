import CPrefsShared
import Foundation

/// Opening, the file itself: what is at the journal's path, and what its first bytes say.
extension Journal {
    /// The journal's file, opened and looked at before anything is read from it.
    struct OpenedFile {
        let descriptor: Int32
        /// False when the file could only be opened for reading.
        let isWritable: Bool
        /// The file's size when it was opened.
        let size: Int

        /// The size of the file `descriptor` is open on now (0 when it cannot be read).
        static func size(of descriptor: Int32) -> Int {
            SystemCall.fstat(descriptor).map { Int(clamping: $0.st_size) } ?? 0
        }

        /// Opens `path`, creating it when `writable`; `nil` for a read-only store that has no
        /// journal to read.
        ///
        /// Never through a symbolic link (its target would be taken for a journal), and never
        /// waiting on a FIFO: what is there is looked at before anything is read. A journal this
        /// process cannot write while it may write the database (another user made it) is said
        /// now, not with a store that turns out read-only at the first write.
        static func open(_ path: String, databasePath: String, writable: Bool) throws -> OpenedFile? {
            func failure(_ kind: JournalError.Kind, _ message: String) -> JournalError {
                JournalError(kind, path: databasePath, message)
            }
            let flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
            var descriptor: Int32 = -1
            var created = false
            if writable {
                descriptor = SystemCall.open(path, O_RDWR | O_CREAT | O_EXCL | flags, 0o600)
                created = descriptor >= 0
                if !created && errno == EEXIST { descriptor = SystemCall.open(path, O_RDWR | flags) }
            }
            let isWritable = descriptor >= 0
            let writeFailure = writable && !isWritable ? errno : 0
            if !isWritable && writeFailure != ELOOP { descriptor = SystemCall.open(path, O_RDONLY | flags) }
            guard descriptor >= 0 else {
                let reason = Self.reason(writeFailure: writeFailure, readFailure: errno)
                if reason == ELOOP {
                    throw failure(
                        .cannotOpen, "the journal \(path): it is a symbolic link; refused, never followed")
                }
                if JournalError.isProtectedData(openFailure: reason, path: path) {
                    throw failure(
                        .protectedDataUnavailable,
                        "the journal \(path) cannot be opened before the device is first unlocked")
                }
                if !writable { return nil }
                throw JournalError(
                    .cannotOpen, path: databasePath, failedTo: "open the journal \(path)", errno: reason
                )
            }
            let info = SystemCall.fstat(descriptor) ?? FileStatus()
            if let problem = FileKind.problem(mode: info.st_mode), info.st_mode != 0 {
                SystemCall.close(descriptor)
                throw failure(
                    .cannotOpen, "the journal \(path): \(problem); a journal must be a regular file")
            }
            if writable && !isWritable {
                SystemCall.close(descriptor)
                throw failure(
                    .cannotOpen,
                    "the journal \(path) belongs to user \(info.st_uid) with mode \(String(info.st_mode & 0o777, radix: 8)), and this process (user \(geteuid())) cannot write it: \(JournalError.systemReason(writeFailure))"
                )
            }
            if created { adoptDatabaseOwnership(descriptor, databasePath: databasePath) }
            return OpenedFile(
                descriptor: descriptor, isWritable: isWritable, size: Int(clamping: info.st_size))
        }

        /// Why the journal could not be opened: the read-only attempt's reason, unless it found
        /// no file, when the failed create says why there is none (`EPERM` from a folder whose
        /// data is locked away: that is protected data, not a missing file); a link, from either.
        static func reason(writeFailure: Int32, readFailure: Int32) -> Int32 {
            if writeFailure == ELOOP { return ELOOP }
            return readFailure == ENOENT && writeFailure != 0 ? writeFailure : readFailure
        }

        /// Gives a journal this process just created the database file's owner and mode, as
        /// SQLite does for its `-wal` and `-shm` (root writing a user's store must not leave a
        /// journal the user cannot write), and syncs the folder so a power loss cannot lose the
        /// file's name.
        private static func adoptDatabaseOwnership(_ descriptor: Int32, databasePath: String) {
            if let database = SystemCall.stat(databasePath) {
                _ = fchmod(descriptor, database.st_mode & 0o666)
                if geteuid() == 0 { _ = fchown(descriptor, database.st_uid, database.st_gid) }
            }
            let folder = (databasePath as NSString).deletingLastPathComponent
            let folderDescriptor = SystemCall.open(folder.isEmpty ? "." : folder, O_RDONLY | O_CLOEXEC)
            if folderDescriptor >= 0 {
                _ = SystemCall.fsync(folderDescriptor)
                SystemCall.close(folderDescriptor)
            }
        }
    }

    /// The file's first bytes (the header's page and a new journal's records' first page).
    struct Head {
        let bytes: [UInt8]
        /// How many bytes the file gave (0 or less: an empty file).
        let count: Int

        init(reading descriptor: Int32) {
            var bytes = [UInt8](repeating: 0, count: Layout.headerSize + Layout.growthStep)
            count = bytes.withUnsafeMutableBytes {
                SystemCall.pread(descriptor, $0.baseAddress!, $0.count, at: 0)
            }
            self.bytes = bytes
        }

        var magic: ArraySlice<UInt8> { bytes.prefix(8) }

        func field32(_ offset: Int) -> UInt32 {
            guard count >= offset + 4 else { return 0 }
            return bytes[offset..<offset + 4].withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))
            }
        }

        func field64(_ offset: Int) -> UInt64 {
            guard count >= offset + 8 else { return 0 }
            return bytes[offset..<offset + 8].withUnsafeBytes {
                UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
            }
        }

        var lockKind: Int32 { Int32(bitPattern: field32(Layout.lockKindOffset)) }
        /// The identity of the database the journal belongs to (0: any).
        var owner: UInt64 { field64(Layout.databaseIDOffset) }
        /// The identity's second copy (0: a journal made before there was one).
        var ownerCopy: UInt64 { field64(Layout.databaseIDCopyOffset) }

        /// Whether the journal belongs to another database than `databaseID`.
        ///
        /// It is this database's when either copy of its identity says so (a flipped bit damages
        /// at most one, and the records keep their own checksums), or when it names none. It is
        /// another's only when no copy names this one: both copies agree on another identity,
        /// or, in a journal made before the copy, the one identity does.
        func belongsToAnotherDatabase(than databaseID: UInt64?) -> Bool {
            guard let databaseID else { return false }
            if owner == databaseID || ownerCopy == databaseID { return false }
            if owner == 0 && ownerCopy == 0 { return false }
            return true
        }

        /// What the file is.
        enum Verdict {
            /// Empty, the older signal-only file, or a journal whose creation stopped early: made anew.
            case new
            /// A journal of a format this release reads.
            case journal
            /// No magic, yet more than an unfinished journal holds: moved aside, never truncated.
            case unreadable
            /// Not for a read-only store to use (nothing done).
            case notOurs
        }

        /// Whether a writer may open this journal without the opening lock (another process
        /// holds it, see `openOnce`): a whole journal of this database, its first page all
        /// there, with nothing to make, move aside or grow.
        func opensWithoutTheLock(_ verdict: Verdict, databaseID: UInt64?) -> Bool {
            guard case .journal = verdict, count >= Layout.headerSize + Layout.growthStep else {
                return false
            }
            return !belongsToAnotherDatabase(than: databaseID)
        }

        var verdictIsNew: Bool { count <= 0 || magic.elementsEqual(Layout.signalMagic) || isZeroMagic }

        private var isZeroMagic: Bool { magic.allSatisfy { $0 == 0 } }

        /// Says what the file is, throwing for a file that is another program's or a newer
        /// release's journal.
        func verdict(fileSize: Int, writable: Bool, isWritable: Bool, path: String) throws -> Verdict {
            if count <= 0 || magic.elementsEqual(Layout.signalMagic) { return .new }
            if isZeroMagic {
                // A journal whose header page a power loss lost (its records cannot be trusted),
                // or not a journal at all, when it holds more than an unfinished one could.
                let unfinished =
                    fileSize <= Layout.headerSize + Layout.growthStep
                    && bytes[..<count].dropFirst(Layout.fieldsSize).allSatisfy { $0 == 0 }
                return unfinished || !isWritable ? .new : .unreadable
            }
            let databasePath = String(path.dropLast("-prefs".count))
            guard magic.elementsEqual(Layout.magic) else {
                guard writable else { return .notOurs }
                throw JournalError(
                    .foreignDatabase, path: databasePath,
                    "\(path) is not a Prefs journal; it was left untouched")
            }
            let version = field32(Layout.versionOffset)
            if version > Layout.version {
                throw JournalError(
                    .newerSchema, path: databasePath,
                    "\(path) has journal format \(version); this release knows \(Layout.version)")
            }
            return .journal
        }
    }

    /// Renames the file at `path` to `<path>.<label>-<time>-<pid>` and says why.
    static func moveAside(
        _ path: String, as label: String, because reason: String,
        failure: (JournalError.Kind, String) -> JournalError, reporter: Reporter
    ) throws {
        let aside = "\(path).\(label)-\(Int64(Date().timeIntervalSince1970))-\(getpid())"
        guard SystemCall.rename(path, aside) else {
            throw failure(
                .foreignDatabase,
                "\(path): \(reason), and it cannot be moved aside: \(JournalError.systemReason(errno))")
        }
        reporter(path, "\(reason); it was moved to \(aside) and a new journal made")
    }
}
