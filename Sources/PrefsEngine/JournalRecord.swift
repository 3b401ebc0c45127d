import CPrefsShared
import Foundation
import PrefsSupport

/// Where a record's header fields are (the layout below), named once for every reader and
/// writer of records.
package enum RecordHeader {
    /// The record's length without padding (u32).
    static let lengthOffset = 0
    /// The CRC-32C (u32) of the bytes from ``checksummedFrom`` up to the length.
    static let checksumOffset = 4
    /// The sequence number (u64): the first byte the checksum covers.
    package static let sequenceOffset = 8
    /// Where the checksum starts.
    static let checksummedFrom = sequenceOffset
    /// The number of entries (u32).
    static let entryCountOffset = 16
    /// The header's size: the entries start here.
    static let size = 20
}

/// Where an entry's fields are: the key's length (u32), the value's (u32, `0xFFFFFFFF` for a
/// removal), then the key's UTF-8 and the value's bytes.
enum RecordEntryLayout {
    static let valueLengthOffset = 4
    /// The two lengths' size: the key's bytes start here.
    static let size = 8
}

/// One record of the ``Journal``: one write, or one whole transaction.
///
/// Layout (little-endian, padded to a multiple of 8 bytes):
///
/// | bytes | what |
/// |---|---|
/// | 4 | length of the record, without padding |
/// | 4 | CRC-32C of everything after this field, up to the length |
/// | 8 | sequence number |
/// | 4 | number of entries |
/// | … | each entry: key length (4), value length (4; `0xFFFFFFFF` for a removal), the key's UTF-8, the value's stored encoding |
package struct JournalRecord {
    /// One entry of a decoded record.
    struct Entry {
        let key: String
        /// The value's stored encoding (what the store wrote through ``RecordWriter``), or `nil`
        /// for a removal.
        let encodedValue: Data?
    }

    let sequence: UInt64
    let entries: [Entry]

    package static let headerSize = RecordHeader.size
    static let removal = UInt32.max

    /// The sequence number of an encoded record.
    static func sequence(of record: [UInt8]) -> UInt64 {
        record.withUnsafeBytes {
            UInt64(
                littleEndian: $0.loadUnaligned(fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self))
        }
    }

    static func padding(_ length: Int) -> Int { (8 - length % 8) % 8 }

    /// Decodes a record's bytes (length and checksum already checked), or says what is wrong.
    static func decode(_ bytes: [UInt8]) -> Result<JournalRecord, RecordProblem> {
        bytes.withUnsafeBytes { buffer in
            let sequence = UInt64(
                littleEndian: buffer.loadUnaligned(
                    fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self))
            var entries: [Entry] = []
            if let problem = RecordEntries.read(
                buffer,
                { key, value in
                    entries.append(Entry(key: key, encodedValue: value.map { Data(buffer[$0]) }))
                })
            {
                return .failure(problem)
            }
            return .success(JournalRecord(sequence: sequence, entries: entries))
        }
    }
}

/// The one encoder of records: entries added one by one, each key's UTF-8 and the bytes its value
/// writes (the journal never reads values; the store gives and takes their stored encoding), then
/// sealed with the length and checksum.
///
/// Written through a pointer into memory that grows only by doubling, never appended to a few
/// bytes at a time: each append to an array checks its capacity and uniqueness, and a one-value
/// record's seven appends were a fifth of a write's instructions.
///
/// ```swift
/// var writer = RecordWriter(sequence: 8, count: 2)
/// writer.add(key: "volume", value: [0x03, 1, 0, 0, 0, 0, 0, 0, 0])
/// writer.addRemoval(key: "theme")
/// let record = writer.sealed()  // 56 bytes: a header of 20, entries of 23 and 13
/// ```
package struct RecordWriter {
    /// The record's bytes up to `end`, then room (`storage.count` is the room there is).
    private var storage: [UInt8]
    private var end = 0

    /// A record numbered `sequence` that will hold `count` entries, written over `storage`
    /// (``SealedRecord/memory``): a writer that hands back the last record's memory allocates
    /// nothing for the next.
    package init(sequence: UInt64, count: Int, reusing storage: consuming [UInt8] = []) {
        self.storage = consume storage
        if self.storage.count < 64 { self.storage = [UInt8](repeating: 0, count: 64) }
        // Length and checksum (filled in by `sealed()`), sequence number, entry count.
        write(JournalRecord.headerSize) { start in
            start.storeBytes(of: 0, as: UInt64.self)
            start.storeBytes(
                of: sequence.littleEndian, toByteOffset: RecordHeader.sequenceOffset, as: UInt64.self)
            start.storeBytes(
                of: UInt32(count).littleEndian, toByteOffset: RecordHeader.entryCountOffset, as: UInt32.self)
        }
    }

    /// Adds an entry setting `key` to the `valueCount` bytes `writeValue` writes from the pointer
    /// it is given (it returns how many it wrote: exactly `valueCount`).
    mutating func add(key: String, valueCount: Int, writeValue: (UnsafeMutableRawPointer) -> Int) {
        addEntry(key: key, valueCount: valueCount) { start in
            let written = writeValue(start)
            // An encoder that wrote more than it said has already written past the entry:
            // stop rather than seal a record around it.
            precondition(
                written == valueCount, "a value wrote \(written) bytes, not the \(valueCount) it counted")
        }
    }

    /// Adds an entry setting `key` to a value's stored encoding.
    package mutating func add(key: String, value: [UInt8]) {
        value.withUnsafeBytes { bytes in
            addEntry(key: key, valueCount: bytes.count) { start in
                if let base = bytes.baseAddress { start.copyMemory(from: base, byteCount: bytes.count) }
            }
        }
    }

    /// Adds an entry removing `key`.
    package mutating func addRemoval(key: String) { addEntry(key: key, valueCount: nil) { _ in } }

    /// The record: length and checksum filled in, padded to a multiple of 8.
    package consuming func sealed() -> SealedRecord {
        var record = sealedUnnumbered()
        record.number(sequence: record.sequence)
        return record
    }

    /// The record with its length filled in and padded, but no checksum: not a record until
    /// ``SealedRecord/number(sequence:)`` gives it its number (a write that knows its record
    /// before taking the journal's lock encodes it outside, and numbers it under the lock).
    consuming func sealedUnnumbered() -> SealedRecord {
        let length = end
        let padding = JournalRecord.padding(length)
        write(padding) { start in start.initializeMemory(as: UInt8.self, repeating: 0, count: padding) }
        storage.withUnsafeMutableBytes {
            $0.storeBytes(
                of: UInt32(length).littleEndian, toByteOffset: RecordHeader.lengthOffset, as: UInt32.self)
        }
        return SealedRecord(storage: storage, count: end)
    }

    /// An entry: the key's length and the value's (`nil`: a removal), the key's UTF-8, the value.
    private mutating func addEntry(
        key: String, valueCount: Int?, writeValue: (UnsafeMutableRawPointer) -> Void
    ) {
        var key = key
        key.withUTF8 { utf8 in
            write(RecordEntryLayout.size + utf8.count + (valueCount ?? 0)) { start in
                start.storeBytes(of: UInt32(utf8.count).littleEndian, as: UInt32.self)
                let valueLength = valueCount.map { UInt32($0) } ?? JournalRecord.removal
                start.storeBytes(
                    of: valueLength.littleEndian, toByteOffset: RecordEntryLayout.valueLengthOffset,
                    as: UInt32.self)
                let keyStart = start + RecordEntryLayout.size
                if let key = utf8.baseAddress { keyStart.copyMemory(from: key, byteCount: utf8.count) }
                writeValue(keyStart + utf8.count)
            }
        }
    }

    /// Makes `count` bytes at the end of the record, written by `body` from their start.
    private mutating func write(_ count: Int, _ body: (UnsafeMutableRawPointer) -> Void) {
        if storage.count - end < count {
            // Doubling: a record of any size costs a constant per byte.
            storage.append(contentsOf: repeatElement(0, count: max(count, storage.count)))
        }
        let start = end
        end += count
        storage.withUnsafeMutableBytes { body($0.baseAddress! + start) }
    }
}

/// A sealed record's bytes (``RecordWriter/sealed()``), in memory the next record may reuse.
///
/// The memory is never cut to the record's size (an array cut and grown again on every write cost
/// as much as writing the record): the record is its first ``count`` bytes.
///
/// <!-- swift: not compiled (inside a commit: a writer filled, the journal's lock held) -->
/// ```swift
/// var record = writer.sealedUnnumbered()
/// record.number(sequence: journal.sequence + 1)
/// let end = try journal.append(record, locked: locked)
/// ```
package struct SealedRecord {
    /// The record's bytes, then room.
    private(set) var memory: [UInt8]
    /// The record's length, padding included.
    let count: Int

    fileprivate init(storage: [UInt8], count: Int) {
        memory = storage
        self.count = count
    }

    /// The record's bytes alone, as an array of their own.
    package var bytes: [UInt8] { Array(memory[..<count]) }

    /// The record's sequence number.
    var sequence: UInt64 {
        memory.withUnsafeBytes {
            UInt64(
                littleEndian: $0.loadUnaligned(fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self))
        }
    }

    /// Runs `body` on the record's bytes.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try memory.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Gives the record its sequence number `sequence` and its checksum (over everything after
    /// the checksum, up to the length).
    mutating func number(sequence: UInt64) {
        memory.withUnsafeMutableBytes { buffer in
            // The record this process just built: its length is its buffer's, an Int already.
            let length = Int(truncatingIfNeeded: UInt32(littleEndian: buffer.loadUnaligned(as: UInt32.self)))
            buffer.storeBytes(
                of: sequence.littleEndian, toByteOffset: RecordHeader.sequenceOffset, as: UInt64.self)
            let checksum = prefs_crc32c(
                buffer.baseAddress! + RecordHeader.checksummedFrom, length - RecordHeader.checksummedFrom)
            buffer.storeBytes(
                of: checksum.littleEndian, toByteOffset: RecordHeader.checksumOffset, as: UInt32.self)
        }
    }
}

/// The one parser of a record's entries, which every reader of records uses (a decoded copy, a
/// checkpoint reading in place): every bound and every key's UTF-8 is checked before the first
/// entry is handed out, so a record counts all or nothing.
package enum RecordEntries {
    /// Calls `each` with every entry of `record`, or says what is wrong.
    ///
    /// `record` is a whole record, header included, its length and checksum already checked.
    /// `each` gets the key, and where its value's stored encoding lies in
    /// `record` (`nil` for a removal). Returns what is wrong instead, having called nothing.
    package static func read(
        _ record: UnsafeRawBufferPointer, _ each: (_ key: String, _ value: Range<Int>?) -> Void
    ) -> RecordProblem? {
        walk(record, handingOut: true) { key, value in
            each(String(decoding: UnsafeRawBufferPointer(rebasing: record[key]), as: UTF8.self), value)
        }
    }

    /// What is wrong with `record`'s entries, or `nil` when ``read(_:_:)`` would take them all
    /// (without making a string of any key).
    static func check(_ record: UnsafeRawBufferPointer) -> RecordProblem? {
        walk(record, handingOut: false, { _, _ in })
    }

    /// Pass 0 checks every entry; pass 1, when `handingOut`, hands each to `each`: where its
    /// key's UTF-8 and its value's stored encoding lie in `record`.
    static func walk(
        _ record: UnsafeRawBufferPointer, handingOut: Bool,
        _ each: (_ key: Range<Int>, _ value: Range<Int>?) -> Void
    ) -> RecordProblem? {
        // Fields are read as the fixed-width integers they are; a length is then clamped, so one
        // past a 32-bit Int (a damaged record, on a watch) fails the bounds checks, never traps.
        func read32(_ at: Int) -> UInt32 {
            UInt32(littleEndian: record.loadUnaligned(fromByteOffset: at, as: UInt32.self))
        }
        guard record.count >= JournalRecord.headerSize else {
            return RecordProblem("a record shorter than its header")
        }
        let count = Int(clamping: read32(RecordHeader.entryCountOffset))
        let length = record.count
        for pass in 0..<(handingOut ? 2 : 1) {
            var at = JournalRecord.headerSize
            for _ in 0..<count {
                guard at + RecordEntryLayout.size <= length else {
                    return RecordProblem("an entry runs past its record")
                }
                let keyLength = Int(clamping: read32(at))
                let rawValueLength = read32(at + RecordEntryLayout.valueLengthOffset)
                let isRemoval = rawValueLength == JournalRecord.removal
                let valueLength = isRemoval ? 0 : Int(clamping: rawValueLength)
                at += RecordEntryLayout.size
                guard keyLength <= length - at, valueLength <= length - at - keyLength else {
                    return RecordProblem("an entry runs past its record")
                }
                let keyBytes = UnsafeRawBufferPointer(rebasing: record[at..<at + keyLength])
                if pass == 0 {
                    guard String(validatingUTF8Bytes: keyBytes) != nil else {
                        return RecordProblem("a key is not UTF-8")
                    }
                } else {
                    let value = isRemoval ? nil : (at + keyLength)..<(at + keyLength + valueLength)
                    each(at..<at + keyLength, value)
                }
                at += keyLength + valueLength
            }
            guard at == length else { return RecordProblem("trailing bytes in a record") }
        }
        return nil
    }
}

/// Why a record was not accepted.
package struct RecordProblem: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// Reads records one after another, trusting nothing: each is bounds-checked against the end it
/// was given, checked by its CRC, and must carry a sequence number above the one before.
///
/// A scan without the lock may read bytes a compaction is moving; the caller checks the
/// journal's generation afterwards and throws away what it read when it changed.
struct RecordScan {
    let journal: Journal
    let end: Int
    /// Where the next record starts (after the last good one).
    private(set) var offset: Int
    /// The sequence number of the last good record (or the one given to start after).
    private(set) var lastSequence: UInt64
    /// Why the scan stopped before `end`, when it did.
    private(set) var failure: String?

    /// A copy of the journal's bytes from `start` on, read instead of the mapping when given.
    private let copy: (bytes: UnsafeRawBufferPointer, start: Int)?

    init(journal: Journal, from offset: Int, to end: Int, after sequence: UInt64) {
        self.journal = journal
        self.offset = offset
        // Never past the mapping, whatever a damaged header says the end of records is (the
        // records' own lengths are checked against `end`, so this bounds every read).
        self.end = min(end, Journal.Layout.reservation)
        lastSequence = sequence
        copy = nil
    }

    /// A scan of `bytes`, a copy of `journal`'s bytes from `offset` on (offsets stay the
    /// journal's), for ``nextInPlace(skipping:_:)``: a reader without the lock copies the
    /// records once, checks that none moved meanwhile, and reads the copy in place.
    init(
        copy bytes: UnsafeRawBufferPointer, of journal: Journal, from offset: Int, after sequence: UInt64
    ) {
        self.journal = journal
        self.offset = offset
        end = offset + bytes.count
        lastSequence = sequence
        copy = (bytes, offset)
    }

    /// The bytes at the journal's `offset`, in the copy or in place.
    private func inPlace(at offset: Int, count: Int) -> UnsafeRawBufferPointer {
        guard let copy else { return journal.bytesInPlace(at: offset, count: count) }
        return UnsafeRawBufferPointer(
            rebasing: copy.bytes[(offset - copy.start)..<(offset - copy.start + count)])
    }

    /// The next record, decoded; `nil` at the end or at the first bad record (see ``failure``).
    mutating func next() -> JournalRecord? {
        guard let length = nextLength() else { return nil }
        // The order first: an old record left past the end is neither copied nor checked.
        guard journal.load(UInt64.self, at: offset + RecordHeader.sequenceOffset) > lastSequence else {
            return stop("the record at byte \(offset) does not follow the one before")
        }
        let bytes = journal.copyBytes(at: offset, count: length)
        let checksum = bytes.withUnsafeBytes {
            UInt32(
                littleEndian: $0.loadUnaligned(fromByteOffset: RecordHeader.checksumOffset, as: UInt32.self))
        }
        let actual = bytes.withUnsafeBytes {
            prefs_crc32c(
                $0.baseAddress! + RecordHeader.checksummedFrom, length - RecordHeader.checksummedFrom)
        }
        guard checksum == actual else { return stop("a record at byte \(offset) fails its checksum") }
        // The order before the entries: an old record left past the end is not decoded.
        guard JournalRecord.sequence(of: bytes) > lastSequence else {
            return stop("the record at byte \(offset) does not follow the one before")
        }
        switch JournalRecord.decode(bytes) {
        case .failure(let problem): return stop("the record at byte \(offset): \(problem)")
        case .success(let record):
            lastSequence = record.sequence
            offset += length + JournalRecord.padding(length)
            return record
        }
    }

    /// Where an entry's value lies in the journal, as ``nextInPlace(_:)`` hands it out.
    struct ValueBytes {
        let offset: Int
        let count: Int
    }

    /// The next record, checked like ``next()`` but read in place.
    ///
    /// `handle` gets the record's
    /// sequence number, each key, and where its value's bytes are in the journal (`nil` for a
    /// removal). Returns the sequence number. Only for a reader the records hold still for (see
    /// ``Journal/bytesInPlace(at:count:)``).
    ///
    /// Records numbered up to `skipped` are stepped over unread (a checkpoint has them already).
    mutating func nextInPlace(
        skipping skipped: UInt64 = 0, _ handle: (UInt64, String, ValueBytes?) -> Void
    )
        -> UInt64?
    {
        nextEntries(skipping: skipped) { sequence, record, start, key, value in
            handle(
                sequence, String(decoding: UnsafeRawBufferPointer(rebasing: record[key]), as: UTF8.self),
                value.map { ValueBytes(offset: start + $0.lowerBound, count: $0.count) })
        }
    }

    /// The same, each key handed out as where its UTF-8 lies in the journal (no string made:
    /// a checkpoint compares and binds the bytes themselves).
    mutating func nextInPlace(
        skipping skipped: UInt64 = 0, keyBytes handle: (UInt64, ValueBytes, ValueBytes?) -> Void
    ) -> UInt64? {
        nextEntries(skipping: skipped) { sequence, _, start, key, value in
            handle(
                sequence, ValueBytes(offset: start + key.lowerBound, count: key.count),
                value.map { ValueBytes(offset: start + $0.lowerBound, count: $0.count) })
        }
    }

    /// The next record checked whole and its entries handed to `each`: the sequence number,
    /// the record in place, where it starts in the journal, and where each key and value lie
    /// in the record.
    private mutating func nextEntries(
        skipping skipped: UInt64,
        _ each: (UInt64, UnsafeRawBufferPointer, Int, Range<Int>, Range<Int>?) -> Void
    ) -> UInt64? {
        guard let length = nextLength() else { return nil }
        let numbered = UInt64(
            littleEndian: inPlace(at: offset, count: length).loadUnaligned(
                fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self))
        if numbered <= skipped && numbered > lastSequence {
            lastSequence = numbered
            offset += length + JournalRecord.padding(length)
            return numbered
        }
        guard let (bytes, sequence) = wholeRecord(length: length) else { return nil }
        let start = offset
        if let problem = RecordEntries.walk(
            bytes, handingOut: true, { key, value in each(sequence, bytes, start, key, value) })
        {
            return stop("the record at byte \(offset): \(problem)")
        }
        lastSequence = sequence
        offset += length + JournalRecord.padding(length)
        return sequence
    }

    /// The next record's sequence number, the record checked whole in place as
    /// ``nextInPlace(skipping:_:)`` checks it, and nothing of it read out.
    ///
    /// For a writer that appends after records it does not apply: it never appends after one
    /// that readers would stop at (and a repair would then cut, with the write after it).
    mutating func nextChecked() -> UInt64? {
        guard let length = nextLength(), let (bytes, sequence) = wholeRecord(length: length) else {
            return nil
        }
        if let problem = RecordEntries.check(bytes) {
            return stop("the record at byte \(offset): \(problem)")
        }
        lastSequence = sequence
        offset += length + JournalRecord.padding(length)
        return sequence
    }

    /// The next record's sequence number, without decoding it (for records known to be good:
    /// the lock is held and they were checked when appended).
    mutating func nextHeader() -> (sequence: UInt64, length: Int)? {
        guard let length = nextLength() else { return nil }
        let sequence = journal.load(UInt64.self, at: offset + RecordHeader.sequenceOffset)
        lastSequence = sequence
        offset += length + JournalRecord.padding(length)
        return (sequence, length)
    }

    /// The record at `offset`, `length` bytes, in place, and its sequence number: when its
    /// checksum holds and it follows the one before.
    private mutating func wholeRecord(length: Int) -> (bytes: UnsafeRawBufferPointer, sequence: UInt64)? {
        let bytes = inPlace(at: offset, count: length)
        let checksum = UInt32(
            littleEndian: bytes.loadUnaligned(fromByteOffset: RecordHeader.checksumOffset, as: UInt32.self))
        guard
            checksum
                == prefs_crc32c(
                    bytes.baseAddress! + RecordHeader.checksummedFrom, length - RecordHeader.checksummedFrom)
        else {
            return stop("a record at byte \(offset) fails its checksum")
        }
        let sequence = UInt64(
            littleEndian: bytes.loadUnaligned(fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self))
        guard sequence > lastSequence else {
            return stop("the record at byte \(offset) does not follow the one before")
        }
        return (bytes, sequence)
    }

    /// The length of the record at `offset` when it fits before `end`.
    private mutating func nextLength() -> Int? {
        guard failure == nil, offset + JournalRecord.headerSize <= end else { return nil }
        let length =
            copy == nil
            ? Int(clamping: journal.load(UInt32.self, at: offset))
            : Int(
                clamping: UInt32(littleEndian: inPlace(at: offset, count: 4).loadUnaligned(as: UInt32.self)))
        if length == 0 { return nil }  // zeros: where nothing was written yet
        guard length >= JournalRecord.headerSize, length <= end - offset else {
            return stop("the record at byte \(offset) claims \(length) bytes")
        }
        return length
    }

    private mutating func stop<Nothing>(_ reason: String) -> Nothing? {
        failure = reason
        return nil
    }
}
