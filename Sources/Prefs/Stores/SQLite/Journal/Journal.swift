import CPrefsShared
import Foundation

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
final class Journal: @unchecked Sendable {
    /// Where things are in the file.
    enum Layout {
        static let magic = Array("PrefsJnl".utf8)
        /// The earlier, signal-only form of the file (no data): replaced by a journal when found.
        static let signalMagic = Array("PrefsSig".utf8)
        static let version: UInt32 = 2
        static let headerSize = 4096
        // Every field's place comes from the C struct `prefs_journal_header` (`prefs_shared.h`),
        // whose assertions fix the layout; a test checks the design document's table against it.
        static let versionOffset = offset(\.version)
        static let counterOffset = offset(\.counter)
        static let sleepersOffset = offset(\.sleepers)
        static let writingOffset = offset(\.writing)
        static let lockKindOffset = offset(\.lock_kind)
        static let sequenceOffset = offset(\.sequence)
        static let writeOffsetOffset = offset(\.write_offset)
        static let baseOffset = offset(\.base_sequence)
        static let generationOffset = offset(\.generation)
        static let fileSizeOffset = offset(\.file_size)
        /// A move of records to the top in progress (zero when none is).
        ///
        /// Where they come from, how many bytes, the base sequence number it sets, and the
        /// checksum of the bytes moved. Written (and, where `.powerSafe` stores write, synced)
        /// before the copy starts, so a process killed or a power loss while copying leaves
        /// enough for the next holder to finish it.
        static let moveFromOffset = offset(\.move_from)
        static let moveLengthOffset = offset(\.move_length)
        static let moveBaseOffset = offset(\.move_base)
        static let moveChecksumOffset = offset(\.move_checksum)
        static let powerSafeWritersOffset = offset(\.power_safe_writers)
        static let databaseIDOffset = offset(\.database_id)
        static let lockOffset = offset(\.lock)
        /// The bytes of the header that hold fields (the rest of its page is zeros).
        static let fieldsSize = MemoryLayout<prefs_journal_header>.size

        private static func offset<Field>(_ field: KeyPath<prefs_journal_header, Field>) -> Int {
            MemoryLayout<prefs_journal_header>.offset(of: field)!
        }
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
    /// Non-zero until the records were checked once under the lock, and again after a reader
    /// found a damaged one: the next holder of the lock checks them (and cuts the damage).
    private let needsCheck = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    /// Set (by the SIGBUS guard) when another process cut the file shorter than the mapping and
    /// a page past its end was touched: the mapping no longer shows the file, and the journal
    /// refuses every write from then on.
    private let cutUnderMapping = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)

    init(
        databasePath: String, path: String, descriptor: Int32, mapping: UnsafeMutableRawPointer,
        isWritable: Bool, lock: JournalLock,
        file: FileIdentity?
    ) {
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
        munmap(mapping, Layout.reservation)
        close(descriptor)
        needsCheck.deallocate()
        cutUnderMapping.deallocate()
    }

    /// Throws when another process cut the file short under the mapping (see `cutUnderMapping`).
    func checkNotCutUnderMapping() throws {
        guard prefs_atomic_load(cutUnderMapping) != 0 else { return }
        throw error(
            .corrupt,
            "another process cut the journal \(path) shorter while this store had it mapped; nothing more is written through it: open the store again"
        )
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
    var writeOffset: Int { Int(truncatingIfNeeded: prefs_atomic_load64(word64(Layout.writeOffsetOffset))) }
    /// Records with this sequence number or lower were moved into SQLite and dropped.
    var baseSequence: UInt64 { prefs_atomic_load64(word64(Layout.baseOffset)) }
    /// Changes (to odd, then to even) whenever records are moved within the file.
    var generation: UInt64 { prefs_atomic_load64(word64(Layout.generationOffset)) }
    /// The size writers grew the file to.
    var fileSize: Int { Int(truncatingIfNeeded: prefs_atomic_load64(word64(Layout.fileSizeOffset))) }
    /// The bytes of records the journal holds.
    var usedBytes: Int { writeOffset - Layout.headerSize }

    /// The futex word: one more after every record.
    var counter: UnsafeMutablePointer<UInt32> { word32(Layout.counterOffset) }
    /// Non-zero while some watcher sleeps, waiting to be woken.
    var sleepers: UnsafeMutablePointer<UInt32> { word32(Layout.sleepersOffset) }

    func set(_ offset: Int, _ value: UInt64) { prefs_atomic_store64(word64(offset), value) }
    func set(_ offset: Int, _ value: Int) { set(offset, UInt64(value)) }

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
            throw SQLiteStoreError(
                path: databasePath, kind: .other, failedTo: "take the journal lock of \(path)", errno: errno)
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

    func error(_ kind: SQLiteStoreError.Kind, _ detail: String) -> SQLiteStoreError {
        SQLiteStoreError(path: databasePath, kind: kind, detail: detail)
    }

    // MARK: - Repairing

    /// Cuts the records at the first one that is not whole, and reports the cut.
    ///
    /// Walks the records from the start; a record that is not whole, or whose sequence number
    /// does not follow, ends them. Reports what it cut (with `reason`, when given).
    /// The sequence number never goes down (a reader may have seen it) and never stays below the
    /// last record's.
    ///
    /// Called holding the lock, or while opening under the opening lock (`held` proves which).
    func repair(reason: String?, held: LockHeld) {
        finishInterruptedMove()
        let fileEnd = actualFileSize()
        var scan = RecordScan(journal: self, from: Layout.headerSize, to: fileEnd, after: baseSequence)
        while scan.next() != nil {}
        let previousEnd = writeOffset
        let cut = scan.offset < previousEnd
        let changed = cut || scan.offset != previousEnd || sequence < scan.lastSequence || fileSize > fileEnd
        guard changed || reason != nil else { return }
        set(Layout.generationOffset, generation | 1)
        prefs_atomic_fence()
        if scan.failure != nil {
            // A cut is final: what lies past it is zeroed, so a later record written at the same
            // place (with the same number, after a power loss left the header's number stale)
            // can never be followed by the cut records, adopted again by a later walk.
            zero(from: scan.offset, to: fileEnd)
        }
        set(Layout.writeOffsetOffset, scan.offset)
        set(Layout.sequenceOffset, max(sequence, scan.lastSequence))
        set(Layout.fileSizeOffset, max(min(fileSize, fileEnd), scan.offset))
        set(Layout.generationOffset, (generation | 1) &+ 1)
        prefs_atomic_store(word32(Layout.writingOffset), 0)
        if cut || reason != nil {
            let what = scan.failure.map { "; \($0)" } ?? ""
            report(
                "\(reason ?? "damaged records")\(what); kept the records up to byte \(scan.offset) (they ended at \(previousEnd))"
            )
        }
    }

    /// Zeroes the file's bytes from `start` to `end` through the mapping, page by page, writing
    /// only pages that are not zero already; synced where `.powerSafe` stores write.
    private func zero(from start: Int, to end: Int) {
        guard start < end else { return }
        let page = 4096
        var offset = start
        while offset < end {
            let next = min(end, (offset / page + 1) * page)
            let bytes = UnsafeMutableRawBufferPointer(start: mapping + offset, count: next - offset)
            if bytes.contains(where: { $0 != 0 }) { bytes.initializeMemory(as: UInt8.self, repeating: 0) }
            offset = next
        }
        if prefs_atomic_load(word32(Layout.powerSafeWritersOffset)) != 0 {
            syncQuietly(from: start, count: end - start)
        }
    }

    func report(_ message: String) { Self.report(path: path, message) }

    /// Says on stderr what happened to the journal at `path` (a repair, a cut, a file moved aside).
    static func report(path: String, _ message: String) {
        FileHandle.standardError.write(Data("prefs: \(path): \(message)\n".utf8))
    }

    func actualFileSize() -> Int {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return Layout.headerSize }
        return min(Int(info.st_size), Layout.reservation)
    }

    // MARK: - Writing (holding the lock)

    /// Appends a record and returns where the records now end.
    ///
    /// Throws `.diskFull` or `.tooLarge`
    /// when the file cannot grow to hold it, with nothing written.
    func append(_ record: [UInt8], locked: LockHeld) throws -> Int {
        let start = writeOffset
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
        set(Layout.sequenceOffset, JournalRecord.sequence(of: record))
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
        let current = fileSize
        let target = min(Layout.reservation, max(end, current * 2, current + Layout.growthStep))
        try extendFile(from: current, to: target)
        set(Layout.fileSizeOffset, target)
    }

    /// Writes zeros from `start` up to `end` (without touching the mapping).
    func extendFile(from start: Int, to end: Int) throws {
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = start
        while offset < end {
            let written = pwrite(descriptor, zeros, min(zeros.count, end - offset), off_t(offset))
            guard written > 0 else {
                // What was added stays (zeros beyond the records); the header keeps the old size.
                throw SQLiteStoreError(
                    path: databasePath, kind: .other, failedTo: "grow the journal \(path)", errno: errno)
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
    func sync() throws {
        let end = min(max(writeOffset, Layout.headerSize), min(actualFileSize(), Layout.reservation))
        guard prefs_sync_mapped(mapping, 0, end, descriptor) == 0 else {
            throw SQLiteStoreError(
                path: databasePath, kind: .other, failedTo: "sync the journal \(path)", errno: errno)
        }
    }

    /// Marks the journal as written by a `.powerSafe` store: from now on every move of records
    /// inside it is synced step by step (see ``drop(through:knownStart:locked:duringMove:)``).
    func noteAPowerSafeWriter() {
        prefs_atomic_store(word32(Layout.powerSafeWritersOffset), 1)
    }

    // MARK: - Dropping what SQLite holds (holding the lock, and SQLite's write lock)

    /// Drops the records up to `checkpointed` (which SQLite now holds), moving the later ones to
    /// the start when they fit below where they are (so a process killed while moving them leaves
    /// them intact where the header still points); otherwise leaves everything for a later time.
    ///
    /// `known` is where the records after `checkpointed` start, when the caller knows it (it
    /// scanned the records in generation `known.generation`); otherwise the records are walked.
    func drop(
        through checkpointed: UInt64, knownStart known: (offset: Int, generation: UInt64)? = nil,
        locked: LockHeld, duringMove: (() -> Void)? = nil
    ) {
        guard baseSequence < checkpointed else { return }
        var keepFrom = writeOffset
        if let known, known.generation == generation {
            keepFrom = known.offset
        } else {
            keepFrom = start(after: checkpointed, upTo: writeOffset)
        }
        // Lengths from shared memory are checked before use: a header that another process
        // damaged (an end below where the kept records start) is left for a repair to find.
        let end = writeOffset
        guard keepFrom >= Layout.headerSize, end >= keepFrom, end <= actualFileSize() else {
            checkOnNextLock()
            return
        }
        let kept = end - keepFrom
        guard Layout.headerSize + kept <= keepFrom else { return }
        let base = min(checkpointed, sequence)
        // Where a `.powerSafe` store writes, its records may be among those moved: each step is
        // on the medium before the next one depends on it (the note before the copy overwrites
        // the top, the copy before the header points at it), so a power loss at any instant
        // leaves the records whole somewhere the next opener looks.
        // (Nothing to copy, nothing to sync: every record is in SQLite, whichever header survives.)
        let synced = kept > 0 && prefs_atomic_load(word32(Layout.powerSafeWritersOffset)) != 0
        // The move is written down first: if this process dies while copying, the records are
        // still whole where they come from (the copy goes below them), and the next holder of
        // the lock copies them again (see `finishInterruptedMove`).
        set(Layout.moveFromOffset, keepFrom)
        set(Layout.moveLengthOffset, kept)
        set(Layout.moveBaseOffset, base)
        prefs_atomic_store(word32(Layout.moveChecksumOffset), prefs_crc32c(mapping + keepFrom, kept))
        set(Layout.generationOffset, generation &+ 1)  // odd: records are moving
        prefs_atomic_fence()
        if synced { syncQuietly(from: 0, count: Layout.fieldsSize) }
        copyRecords(from: keepFrom, count: kept, midway: duringMove)
        if synced { syncQuietly(from: Layout.headerSize, count: kept) }
        finishMove(count: kept, base: base)
        set(Layout.generationOffset, generation &+ 1)  // even again
    }

    /// Copies `count` bytes of records from `source` to the top (in two halves, with `midway`
    /// called between them, when a test stops the process there).
    private func copyRecords(from source: Int, count: Int, midway: (() -> Void)? = nil) {
        guard count > 0 else { return }
        guard let midway else {
            (mapping + Layout.headerSize).copyMemory(from: mapping + source, byteCount: count)
            return
        }
        let half = count / 2
        (mapping + Layout.headerSize).copyMemory(from: mapping + source, byteCount: half)
        midway()
        (mapping + Layout.headerSize + half).copyMemory(
            from: mapping + source + half, byteCount: count - half)
    }

    /// Says where the moved records end and which sequence numbers were dropped, and clears the
    /// note of the move.
    private func finishMove(count: Int, base: UInt64) {
        set(Layout.writeOffsetOffset, Layout.headerSize + count)
        set(Layout.baseOffset, base)
        clearMoveNote()
    }

    private func clearMoveNote() {
        set(Layout.moveLengthOffset, 0)
        set(Layout.moveFromOffset, 0)
        prefs_atomic_store(word32(Layout.moveChecksumOffset), 0)
    }

    /// Finishes a move of records that a killed process (or a power loss) left half done
    /// (holding the lock).
    ///
    /// The note says where the records came from and the checksum of their bytes: when the copy
    /// at the top already has that checksum, only the header is finished; when the source still
    /// has it, the records are copied again; when neither has (both overwritten since), the note
    /// is cleared and the walk through the records decides what is whole.
    func finishInterruptedMove() {
        // The note's fields are written with atomic stores; they are read the same way.
        let source = Int(truncatingIfNeeded: prefs_atomic_load64(word64(Layout.moveFromOffset)))
        let count = Int(truncatingIfNeeded: prefs_atomic_load64(word64(Layout.moveLengthOffset)))
        guard source > 0 || count > 0 else { return }
        let base = prefs_atomic_load64(word64(Layout.moveBaseOffset))
        let checksum = prefs_atomic_load(word32(Layout.moveChecksumOffset))
        // Only a note that describes a move this file can hold is followed; anything else is
        // damage, cleared, and left to the walk through the records.
        let fileEnd = actualFileSize()
        guard count >= 0, source >= Layout.headerSize + count, source <= fileEnd - count, base <= sequence
        else {
            clearMoveNote()
            return
        }
        let newBase = max(base, baseSequence)
        if prefs_crc32c(mapping + Layout.headerSize, count) == checksum {
            finishMove(count: count, base: newBase)
            report("finished a move of \(count) bytes of records that a stopped process had copied")
        } else if prefs_crc32c(mapping + source, count) == checksum {
            copyRecords(from: source, count: count)
            finishMove(count: count, base: newBase)
            report("finished moving \(count) bytes of records that a stopped process was moving")
        } else {
            clearMoveNote()
            report(
                "a move of records was interrupted and neither copy is whole; the records are checked one by one"
            )
        }
    }

    /// Syncs the header's fields or records to the medium, where a failure can only be reported:
    /// a move already made cannot be undone (the next `.powerSafe` write syncs again, and throws).
    private func syncQuietly(from start: Int, count: Int) {
        if prefs_sync_mapped(mapping, start, count, descriptor) != 0 {
            report("cannot sync the journal while moving records: \(SQLiteStoreError.systemReason(errno))")
        }
    }

    /// Empties the journal once SQLite holds every record and more.
    ///
    /// SQLite holds everything up to `sequence` (a write made straight into SQLite with that
    /// number): readers then find the journal behind them and
    /// catch up from SQLite. The base goes up before the number, inside an odd generation, so no
    /// reader takes the new number for records it has applied.
    func dropEverything(through sequence: UInt64, locked: LockHeld) {
        set(Layout.generationOffset, generation | 1)
        prefs_atomic_fence()
        set(Layout.baseOffset, sequence)
        set(Layout.writeOffsetOffset, Layout.headerSize)
        set(Layout.sequenceOffset, max(self.sequence, sequence))
        set(Layout.generationOffset, (generation | 1) &+ 1)
    }

    /// Where the first record numbered after `sequence` starts (or `end`), reading only the
    /// records' headers.
    func start(after sequence: UInt64, upTo end: Int) -> Int {
        var scan = RecordScan(journal: self, from: Layout.headerSize, to: end, after: 0)
        var offset = Layout.headerSize
        while let record = scan.nextHeader() {
            if record.sequence > sequence { return offset }
            offset = scan.offset
        }
        return end
    }

    /// Where a watcher's read of the header stands; see ``RecordScan``.
    struct Position: Equatable {
        var sequence: UInt64
        var generation: UInt64
        var offset: Int
    }
}
