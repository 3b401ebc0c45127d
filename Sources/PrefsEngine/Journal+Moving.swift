import CPrefsShared
import Foundation

/// Dropping what SQLite holds and moving the records written meanwhile to the top, so that a
/// process killed or a power loss at any instant leaves every record whole somewhere.
extension Journal {
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
        let source = Int(clamping: prefs_atomic_load64(word64(Layout.moveFromOffset)))
        let count = Int(clamping: prefs_atomic_load64(word64(Layout.moveLengthOffset)))
        guard source > 0 || count > 0 else { return }
        let base = prefs_atomic_load64(word64(Layout.moveBaseOffset))
        let checksum = prefs_atomic_load(word32(Layout.moveChecksumOffset))
        // Only a note that describes a move this file can hold is followed; anything else is
        // damage, cleared, and left to the walk through the records.
        let fileEnd = actualFileSize()
        // Subtractions only: a damaged count near Int.max must fail the check, not overflow it.
        guard count >= 0, source >= Layout.headerSize, count <= source - Layout.headerSize,
            count <= fileEnd, source <= fileEnd - count, base <= sequence
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
    func syncQuietly(from start: Int, count: Int) {
        if prefs_sync_mapped(mapping, start, count, descriptor) != 0 {
            report("cannot sync the journal while moving records: \(JournalError.systemReason(errno))")
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
}
