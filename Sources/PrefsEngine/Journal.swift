import CPrefsShared
import Foundation
import PrefsSupport

/// The SQLite store's write-ahead journal: `<name>-prefs`, mapped shared by every process that
/// opens the store, where a write costs a `memcpy` instead of a SQLite commit.
///
/// The design and its invariants are in `docs/sqlite-journal-design.md`; in short:
///
/// - **Layout.** A header page, then records from byte 4096 on. The header holds a magic
///   (`PrefsJnl`), the format version, the change counter (the futex word watchers sleep on), a
///   word saying whether anyone sleeps, the last record's sequence number, where the records end
///   (`writeOffset`), the sequence number below which records were moved into SQLite and dropped
///   (`baseSequence`), a generation that is odd while records are being moved, the size writers
///   grew the file to, and a cross-process lock (a robust pthread mutex on Linux; `flock` on the
///   descriptor on Apple platforms).
/// - **Records** (``JournalRecord``) are one write or one whole transaction each, with a
///   sequence number one higher than the last and a CRC-32C: all-or-nothing by construction.
/// - **Writing** happens under the lock: the record's bytes first, then `writeOffset`, then the
///   sequence number (release stores), so a reader that sees a sequence number finds its record
///   complete. A writer marks the header while it writes: whoever takes the lock next and finds
///   the mark (its holder died) checks the records and cuts them at the first incomplete one.
/// - **Reading** takes no lock: one acquire load of the sequence number says whether anything
///   changed; records below `writeOffset` never change while the generation stays the same, so a
///   reader copies them and then checks the generation (a sequence lock).
/// - **Checkpoints** move records into SQLite in one transaction that also records the last
///   sequence number moved (`prefs_meta.checkpointed_sequence`); only then, under the lock, are
///   they dropped from the journal. So a process killed at any instant leaves every record either
///   still in the journal or in SQLite with its sequence number below the mark: nothing applied
///   twice, nothing lost.
package final class Journal: @unchecked Sendable {
    /// Where things are in the file.
    enum Layout {
        static let magic = Array("PrefsJnl".utf8)
        /// The earlier, signal-only form of the file (no data): replaced by a journal when found.
        static let signalMagic = Array("PrefsSig".utf8)
        static let version: UInt32 = 2
        static let headerSize = 4096
        // Every field's place comes from the C struct `prefs_journal_header` (`prefs_shared.h`),
        // whose assertions fix the layout; a test checks the design document's table against it.
        // Constants, not `static let`s: a write reads several, and a `static let` costs a call.
        static var versionOffset: Int { Int(PREFS_JOURNAL_VERSION_OFFSET) }
        static var counterOffset: Int { Int(PREFS_JOURNAL_COUNTER_OFFSET) }
        static var sleepersOffset: Int { Int(PREFS_JOURNAL_SLEEPERS_OFFSET) }
        static var writingOffset: Int { Int(PREFS_JOURNAL_WRITING_OFFSET) }
        static var lockKindOffset: Int { Int(PREFS_JOURNAL_LOCK_KIND_OFFSET) }
        static var sequenceOffset: Int { Int(PREFS_JOURNAL_SEQUENCE_OFFSET) }
        static var writeOffsetOffset: Int { Int(PREFS_JOURNAL_WRITE_OFFSET_OFFSET) }
        static var baseOffset: Int { Int(PREFS_JOURNAL_BASE_SEQUENCE_OFFSET) }
        static var generationOffset: Int { Int(PREFS_JOURNAL_GENERATION_OFFSET) }
        static var fileSizeOffset: Int { Int(PREFS_JOURNAL_FILE_SIZE_OFFSET) }
        /// A move of records to the top in progress (zero when none is).
        ///
        /// Where they come from, how many bytes, the base sequence number it sets, and the
        /// checksum of the bytes moved. Written (and, where `.powerSafe` stores write, synced)
        /// before the copy starts, so a process killed or a power loss while copying leaves
        /// enough for the next holder to finish it.
        static var moveFromOffset: Int { Int(PREFS_JOURNAL_MOVE_FROM_OFFSET) }
        static var moveLengthOffset: Int { Int(PREFS_JOURNAL_MOVE_LENGTH_OFFSET) }
        static var moveBaseOffset: Int { Int(PREFS_JOURNAL_MOVE_BASE_OFFSET) }
        static var moveChecksumOffset: Int { Int(PREFS_JOURNAL_MOVE_CHECKSUM_OFFSET) }
        static var powerSafeWritersOffset: Int { Int(PREFS_JOURNAL_POWER_SAFE_WRITERS_OFFSET) }
        static var databaseIDOffset: Int { Int(PREFS_JOURNAL_DATABASE_ID_OFFSET) }
        /// A second copy of the identity (0 in journals made before it), so that one flipped bit
        /// is told apart from another database's journal.
        static var databaseIDCopyOffset: Int { Int(PREFS_JOURNAL_DATABASE_ID_COPY_OFFSET) }
        static var lockOffset: Int { Int(PREFS_JOURNAL_LOCK_OFFSET) }
        /// The bytes of the header that hold fields (the rest of its page is zeros).
        static let fieldsSize = MemoryLayout<prefs_journal_header>.size

        /// The address space reserved for the mapping: the most the journal can hold at once.
        ///
        /// Address space only; pages are used as records fill them. Mobile systems give a process
        /// less address space, and 32-bit ones little at all.
        static let reservation: Int = {
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
                return MemoryLayout<Int>.size == 8 ? 256 << 20 : 32 << 20
            #else
                return MemoryLayout<Int>.size == 8 ? 1 << 30 : 64 << 20
            #endif
        }()
        /// A new journal's size; it grows in steps of at least this much (doubling).
        static let growthStep = 60 * 1024
        /// The bound on sequence numbers; a header claiming more is damaged.
        ///
        /// SQLite keeps them as signed 64-bit integers. A million writes a second would take
        /// 146,000 years to reach it.
        static let sequenceLimit: UInt64 = 1 << 62
    }

    /// The database the journal belongs to (errors name it).
    let databasePath: String
    /// `<name>-prefs`.
    let path: String
    /// False when the file could only be opened for reading: the store is then read-only.
    let isWritable: Bool
    /// The notify(3) name writers post to on Apple platforms.
    let notificationName: String
    let descriptor: Int32
    let mapping: UnsafeMutableRawPointer
    /// The cross-process lock, of the kind the header names (set while opening).
    let lock: JournalLock
    /// Where the journal says what it repaired or set aside (the store's diagnostics).
    let reporter: Reporter

    /// Says what happened to the journal at a path (`path`, `message`).
    package typealias Reporter = @Sendable (_ path: String, _ message: String) -> Void
    /// Whether the journal's data is locked away now (a file protected by class on a locked
    /// device), given its descriptor; `nil` where the platform protects no file by class.
    package typealias LockedDataProbe = @Sendable (_ descriptor: Int32) -> Bool?
    /// Tells whether a fault in the mapping came from protected data rather than a cut.
    let lockedData: LockedDataProbe
    /// Non-zero until the records were checked once under the lock, and again after a reader
    /// found a damaged one: the next holder of the lock checks them (and cuts the damage).
    private let needsCheck = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    /// Set (by the SIGBUS guard) when a page of the mapping could not be read.
    ///
    /// Another process cut the file shorter than the mapping and a page past its end was
    /// touched, or the device locked a file protected with `.complete`. The guard put a page of zeros there, so the
    /// mapping no longer shows the file: a cut journal refuses every write from then on; locked
    /// data gives `.protectedDataUnavailable` until it is readable, and is then mapped again.
    let cutUnderMapping = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)

    init(
        databasePath: String, path: String, descriptor: Int32, mapping: UnsafeMutableRawPointer,
        isWritable: Bool, lock: JournalLock, reporter: @escaping Reporter,
        file: FileIdentity?, lockedData: @escaping LockedDataProbe = Journal.isDataLockedAway
    ) {
        self.reporter = reporter
        self.lockedData = lockedData
        self.databasePath = databasePath
        self.path = path
        self.descriptor = descriptor
        self.mapping = mapping
        self.isWritable = isWritable
        self.lock = lock
        needsCheck.initialize(to: 1)
        cutUnderMapping.initialize(to: 0)
        _ = prefs_sigbus_guard_add(mapping, Layout.reservation, cutUnderMapping)
        notificationName = "prefs.sqlite.\(file?.device ?? 0).\(file?.inode ?? 0)"
    }

    deinit {
        prefs_sigbus_guard_remove(mapping)
        SystemCall.unmap(mapping, count: Layout.reservation)
        SystemCall.close(descriptor)
        needsCheck.deallocate()
        cutUnderMapping.deallocate()
    }

    /// Throws when a page of the mapping could not be read (see `cutUnderMapping`): locked data
    /// as `.protectedDataUnavailable`, a cut as `.corrupt`.
    func checkNotCutUnderMapping() throws {
        guard prefs_atomic_load(cutUnderMapping) != 0 else { return }
        if lockedData(descriptor) == true { throw protectedDataUnavailable() }
        throw error(
            .corrupt,
            "another process cut the journal \(path) shorter while this store had it mapped; nothing more is written through it: open the store again"
        )
    }

    /// Recovers from a fault that protected data caused, once the data can be read again.
    ///
    /// While the data is locked, throws `.protectedDataUnavailable`; once it can be read again,
    /// the file is mapped again over the same addresses and the records are checked at the next
    /// lock, so the store works again without being reopened. (A cut, or a platform that
    /// protects no file by class, is left to `checkNotCutUnderMapping`.) Called before the lock
    /// is taken: on Linux the lock lives in the mapping.
    func recoverFromLockedData() throws {
        guard prefs_atomic_load(cutUnderMapping) != 0, let locked = lockedData(descriptor) else { return }
        if locked { throw protectedDataUnavailable() }
        guard SystemCall.mapSharedAgain(mapping, descriptor, count: Layout.reservation, writable: isWritable)
        else { return }
        prefs_atomic_store(cutUnderMapping, 0)
        prefs_atomic_store(needsCheck, 1)
        report("its data was locked away while the device was locked; it is readable again")
    }

    /// Whether a page of the mapping faulted since it was last mapped (see `cutUnderMapping`).
    var faultedUnderMapping: Bool { prefs_atomic_load(cutUnderMapping) != 0 }

    /// Whether a reader may read the records.
    ///
    /// `false` while protected data is locked away; once it is readable again, the file is mapped again first (see ``recoverFromLockedData()``).
    /// A cut is the writers' to report: `true`.
    func isReadable() -> Bool {
        guard faultedUnderMapping, lockedData(descriptor) != nil else { return true }
        do { try recoverFromLockedData() } catch { return false }
        return !faultedUnderMapping
    }

    private func protectedDataUnavailable() -> JournalError {
        error(
            .protectedDataUnavailable,
            "the journal \(path) cannot be read while the device is locked (its files are protected); try again after it is unlocked"
        )
    }

    /// Whether the file `descriptor` is open on is locked away now: a read refused with `EPERM`
    /// where files are protected by class; `nil` elsewhere.
    @Sendable static func isDataLockedAway(_ descriptor: Int32) -> Bool? {
        guard JournalError.platformProtectsFiles else { return nil }
        var byte: UInt8 = 0
        return SystemCall.pread(descriptor, &byte, 1, at: 0) < 0 && (errno == EPERM || errno == EACCES)
    }

    // MARK: - The header

    func word32(_ offset: Int) -> UnsafeMutablePointer<UInt32> {
        (mapping + offset).assumingMemoryBound(to: UInt32.self)
    }

    func word64(_ offset: Int) -> UnsafeMutablePointer<UInt64> {
        (mapping + offset).assumingMemoryBound(to: UInt64.self)
    }

    /// The last record's sequence number (or the base, when there is none).
    var sequence: UInt64 { prefs_atomic_load64(word64(Layout.sequenceOffset)) }
    /// Where the records end.
    var writeOffset: Int {
        Int(clamping: prefs_atomic_load64(word64(Layout.writeOffsetOffset)))
    }
    /// Records with this sequence number or lower were moved into SQLite and dropped.
    var baseSequence: UInt64 { prefs_atomic_load64(word64(Layout.baseOffset)) }
    /// Changes (to odd, then to even) whenever records are moved within the file.
    var generation: UInt64 { prefs_atomic_load64(word64(Layout.generationOffset)) }
    /// The size writers grew the file to.
    /// (Header fields are clamped, not truncated: a damaged one past a 32-bit `Int`, on a watch,
    /// reads as too large, which repair finds, never as a negative or wrapped size.)
    var fileSize: Int { Int(clamping: prefs_atomic_load64(word64(Layout.fileSizeOffset))) }
    /// The bytes of records the journal holds.
    var usedBytes: Int { writeOffset - Layout.headerSize }

    /// The futex word: one more after every record.
    var counter: UnsafeMutablePointer<UInt32> { word32(Layout.counterOffset) }
    /// Non-zero while some watcher sleeps, waiting to be woken.
    var sleepers: UnsafeMutablePointer<UInt32> { word32(Layout.sleepersOffset) }

    func set(_ offset: Int, _ value: UInt64) { prefs_atomic_store64(word64(offset), value) }
    func set(_ offset: Int, _ value: Int) { set(offset, UInt64(value)) }
    /// The 64-bit header field at `offset`.
    func field(_ offset: Int) -> UInt64 { prefs_atomic_load64(word64(offset)) }

    /// The bytes from `offset` in place, for a reader that knows they hold still (a checkpoint:
    /// it holds SQLite's write lock, without which nobody moves records).
    func bytesInPlace(at offset: Int, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mapping + offset, count: count)
    }

    /// The little-endian integer at `offset`, read without trusting it to hold still.
    func load<Integer: FixedWidthInteger>(_: Integer.Type, at offset: Int) -> Integer {
        var value = Integer.zero
        withUnsafeMutableBytes(of: &value) { prefs_racy_copy($0.baseAddress, mapping + offset, $0.count) }
        return Integer(littleEndian: value)
    }

    /// The bytes from `offset` (within the mapping), copied without trusting them to hold still.
    func copyBytes(at offset: Int, count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            prefs_racy_copy(buffer.baseAddress, mapping + offset, count)
            initialized = count
        }
    }

    // MARK: - The lock

    /// Proof that the caller holds the journal's lock (or, while opening, the opening lock that
    /// keeps every other process out): the operations that change records require it.
    ///
    /// (Not `Locked<State>`, the in-process lock around a value.)
    struct LockHeld {
        fileprivate let journal: Journal

        /// The proof while opening, under the opening lock (see `prefs_open_begin`).
        static func whileOpening(_ journal: Journal) -> LockHeld { LockHeld(journal: journal) }
    }

    /// Runs `body` holding the cross-process lock, waiting at most `timeout` for it.
    ///
    /// When the last holder died holding it, or left a record or a move half-done, the records
    /// are checked first and cut at the first one that is not whole (reported on stderr).
    ///
    /// `checkpointed`, when given, reads SQLite's `checkpointed_sequence` once the lock is held
    /// (opening passes it): a base above it is a lie (records are dropped only after SQLite
    /// committed them), lowered to it before the records are checked, so no whole record that
    /// SQLite lacks is thrown away.
    func withLock<Result>(
        timeout: Duration, checkingBaseAgainst checkpointed: (() throws -> UInt64)? = nil,
        _ body: (LockHeld) throws -> Result
    ) throws -> Result {
        try withLock(timeoutMilliseconds: Int64(timeout.wholeMilliseconds), checkpointed: checkpointed, body)
    }

    /// The same with the timeout in milliseconds (a write's path: no `Duration` arithmetic).
    func withLock<Result>(
        timeoutMilliseconds timeout: Int64, checkpointed: (() throws -> UInt64)? = nil,
        _ body: (LockHeld) throws -> Result
    ) throws -> Result {
        guard isWritable else { throw error(.readOnly, "the journal \(path) is read-only here") }
        try recoverFromLockedData()  // one load when nothing faulted
        switch lock.acquire(timeoutMilliseconds: timeout) {
        case Int32(PREFS_LOCK_ACQUIRED): break
        case Int32(PREFS_LOCK_ACQUIRED_OWNER_DIED):
            prefs_atomic_store(word32(Layout.writingOffset), 1)
        case Int32(PREFS_LOCK_TIMED_OUT):
            throw error(.busy, "another store held the journal \(path) locked longer than \(timeout) ms")
        case Int32(PREFS_LOCK_WOULD_DEADLOCK):
            throw error(
                .deadlock,
                "this thread already holds the journal lock of \(path): a write to another store on the same file from inside a transaction would wait for itself"
            )
        default:
            throw JournalError(
                .other, path: databasePath, failedTo: "take the journal lock of \(path)", errno: errno)
        }
        defer { lock.release() }
        try checkNotCutUnderMapping()
        if let checkpointed, case let stored = try checkpointed(), baseSequence > stored {
            report(
                "its header says records up to \(baseSequence) are in SQLite, which holds them up to \(stored); the records after \(stored) are checked"
            )
            set(Layout.baseOffset, stored)
            prefs_atomic_store(needsCheck, 1)
        }
        if prefs_atomic_load(word32(Layout.writingOffset)) != 0 || generation % 2 == 1 {
            repair(reason: "a process stopped while changing it", held: LockHeld(journal: self))
        } else if prefs_atomic_exchange(needsCheck, 0) != 0 {
            repair(reason: nil, held: LockHeld(journal: self))
        }
        return try body(LockHeld(journal: self))
    }

    /// Asks the next holder of the lock to check the records (a reader found a damaged one).
    func checkOnNextLock() { prefs_atomic_store(needsCheck, 1) }

    func error(_ kind: JournalError.Kind, _ message: String) -> JournalError {
        JournalError(kind, path: databasePath, message)
    }

    // MARK: - Writing (holding the lock)

    /// Appends a record and returns where the records now end.
    ///
    /// Throws `.diskFull` or `.tooLarge`
    /// when the file cannot grow to hold it, with nothing written.
    func append(_ record: SealedRecord, locked: LockHeld) throws -> Int {
        let start = writeOffset
        // A damaged header's end of records (clamped, so never negative) is checked before any
        // arithmetic: past the reservation it would overflow on a watch; the next holder repairs.
        guard start >= Layout.headerSize, start <= Layout.reservation else {
            checkOnNextLock()
            throw error(
                .corrupt,
                "the journal \(path) says its records end at \(start), outside it; it is repaired at the next write"
            )
        }
        let end = start + record.count
        if end > fileSize { try grow(toHold: end) }
        let writing = word32(Layout.writingOffset)
        prefs_atomic_store(writing, 1)
        record.withUnsafeBytes { bytes in
            (mapping + start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        // Copied into pages that are still the file's, or nothing is announced.
        try checkNotCutUnderMapping()
        // The record, then where records end, then its sequence number: a reader that sees the
        // number finds the whole record.
        set(Layout.writeOffsetOffset, end)
        set(Layout.sequenceOffset, record.sequence)
        prefs_atomic_store(writing, 0)
        return end
    }

    /// Grows the file with zeros written for real, so the blocks exist before the mapping touches
    /// them (a write into a mapped hole on a full disk would kill the process with SIGBUS).
    private func grow(toHold end: Int) throws {
        guard end <= Layout.reservation else {
            throw error(
                .tooLarge,
                "the journal can hold \(Layout.reservation - Layout.headerSize) bytes at once; this write needs \(end - Layout.headerSize)"
            )
        }
        // At most the reservation: a damaged size doubled would overflow.
        let current = min(max(fileSize, Layout.headerSize), Layout.reservation)
        let target = min(Layout.reservation, max(end, current * 2, current + Layout.growthStep))
        try extendFile(from: current, to: target)
        set(Layout.fileSizeOffset, target)
    }

    /// Writes zeros from `start` up to `end` (without touching the mapping).
    func extendFile(from start: Int, to end: Int) throws {
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = start
        while offset < end {
            let written = zeros.withUnsafeBytes {
                SystemCall.pwrite(descriptor, $0.baseAddress!, min(zeros.count, end - offset), at: offset)
            }
            guard written > 0 else {
                // What was added stays (zeros beyond the records); the header keeps the old size.
                throw JournalError(
                    .other, path: databasePath, failedTo: "grow the journal \(path)", errno: errno)
            }
            offset += written
        }
    }

    /// Increments the change counter; true when a watcher sleeps and must be woken (after the
    /// lock is released).
    func announce(locked: LockHeld) -> Bool {
        _ = prefs_atomic_increment(counter)
        return prefs_atomic_exchange(sleepers, 0) != 0
    }

    /// Wakes every watcher of the file, in every process.
    func wakeWatchers() {
        _ = prefs_futex_wake_all(counter)
        #if canImport(Darwin)
            _ = prefs_notify_post(notificationName)
        #endif
    }

    /// Syncs the journal to the medium (for ``SQLiteStore/Durability/powerSafe``): the header and
    /// every record, wherever a checkpoint may have moved them since they were written.
    ///
    /// `msync(MS_SYNC)` over the mapped bytes first, the only call documented to write a shared
    /// mapping's pages back on every platform, then `fdatasync` (`F_FULLFSYNC` on Apple platforms).
    ///
    /// `written`: the bytes of the record just written, when only they (and the header) need
    /// writing back; a checkpoint that moved them meanwhile synced their copy itself.
    func sync(_ written: Range<Int>? = nil) throws {
        // The record just written lies in the mapping (no `fstat` on a write's path); the whole
        // journal is bounded by the file as it is now.
        let range =
            written
            ?? (0..<min(max(writeOffset, Layout.headerSize), min(actualFileSize(), Layout.reservation)))
        guard prefs_sync_mapped(mapping, range.lowerBound, range.count, descriptor) == 0 else {
            throw JournalError(
                .other, path: databasePath, failedTo: "sync the journal \(path)", errno: errno)
        }
    }

    /// Marks the journal as written by a `.powerSafe` store: from now on every move of records
    /// inside it is synced step by step (see ``drop(through:knownStart:locked:duringMove:)``).
    func noteAPowerSafeWriter() {
        prefs_atomic_store(word32(Layout.powerSafeWritersOffset), 1)
    }

    /// Where a watcher's read of the header stands; see ``RecordScan``.
    struct Position: Equatable {
        var sequence: UInt64
        var generation: UInt64
        var offset: Int
    }
}
