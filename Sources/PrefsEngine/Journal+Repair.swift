import CPrefsShared
import Foundation

/// Repairing: cutting the records at the first one that is not whole, and saying so.
extension Journal {
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
        let changed =
            cut || scan.offset != previousEnd || sequence < scan.lastSequence || fileSize > fileEnd
            || fileSize < Layout.headerSize
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
    func zero(from start: Int, to end: Int) {
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

    func report(_ message: String) { reporter(path, message) }

    func actualFileSize() -> Int {
        guard let info = SystemCall.fstat(descriptor) else { return Layout.headerSize }
        return min(Int(clamping: info.st_size), Layout.reservation)
    }
}
