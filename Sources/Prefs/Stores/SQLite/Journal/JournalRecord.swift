import CPrefsShared
import Foundation

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
struct JournalRecord {
    struct Entry {
        let key: StoreKey
        /// The value's stored encoding (``PropertyListValue/storedEncoding()``), or `nil` for a removal.
        let encodedValue: Data?
    }

    let sequence: UInt64
    let entries: [Entry]

    static let headerSize = 20
    static let removal = UInt32.max

    /// The bytes of a record holding `writes` (`count` of them).
    static func encode(
        _ writes: some Sequence<(key: StoreKey, value: PropertyListValue?)>, count: Int, sequence: UInt64
    ) -> [UInt8] {
        var bytes = header(sequence: sequence, count: count)
        for (key, value) in writes {
            append(UInt32(key.name.utf8.count), to: &bytes)
            let lengthOffset = bytes.count
            append(removal, to: &bytes)
            bytes.append(contentsOf: key.name.utf8)
            if let value {
                let start = bytes.count
                value.appendStoredEncoding(to: &bytes)
                let length = UInt32(bytes.count - start).littleEndian
                bytes.withUnsafeMutableBytes {
                    $0.storeBytes(of: length, toByteOffset: lengthOffset, as: UInt32.self)
                }
            }
        }
        seal(&bytes)
        return bytes
    }

    /// The bytes of a record holding `writes`.
    static func encode(_ writes: [StoreKey: ValueChange], sequence: UInt64) -> [UInt8] {
        encode(
            writes.lazy.map { (key: $0.key, value: $0.value.newValue) }, count: writes.count,
            sequence: sequence)
    }

    /// The bytes of a record holding entries already encoded.
    static func encode(_ entries: [Entry], sequence: UInt64) -> [UInt8] {
        var bytes = header(sequence: sequence, count: entries.count)
        for entry in entries {
            append(UInt32(entry.key.name.utf8.count), to: &bytes)
            append(entry.encodedValue.map { UInt32($0.count) } ?? removal, to: &bytes)
            bytes.append(contentsOf: entry.key.name.utf8)
            if let encoded = entry.encodedValue { bytes.append(contentsOf: encoded) }
        }
        seal(&bytes)
        return bytes
    }

    /// A record's first bytes; the length and checksum are filled in by ``seal(_:)``.
    private static func header(sequence: UInt64, count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        append(UInt32(0), to: &bytes)
        append(UInt32(0), to: &bytes)
        append(sequence, to: &bytes)
        append(UInt32(count), to: &bytes)
        return bytes
    }

    /// Fills in the length and checksum, and pads the record.
    private static func seal(_ bytes: inout [UInt8]) {
        let length = bytes.count
        bytes.withUnsafeMutableBytes { buffer in
            buffer.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 0, as: UInt32.self)
            let checksum = prefs_crc32c(buffer.baseAddress! + 8, length - 8)
            buffer.storeBytes(of: checksum.littleEndian, toByteOffset: 4, as: UInt32.self)
        }
        bytes.append(contentsOf: repeatElement(0, count: padding(length)))
    }

    /// The sequence number of an encoded record.
    static func sequence(of record: [UInt8]) -> UInt64 {
        record.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
    }

    static func padding(_ length: Int) -> Int { (8 - length % 8) % 8 }

    private static func append<Integer: FixedWidthInteger>(_ value: Integer, to bytes: inout [UInt8]) {
        // Byte by byte, little-endian: cheaper than a buffer append for four or eight bytes.
        for shift in stride(from: 0, to: Integer.bitWidth, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }

    /// Decodes a record's bytes (length and checksum already checked), or says what is wrong.
    static func decode(_ bytes: [UInt8]) -> Result<JournalRecord, RecordProblem> {
        bytes.withUnsafeBytes { buffer in
            let sequence = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
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

/// The one parser of a record's entries, which every reader of records uses (a decoded copy, a
/// checkpoint reading in place): every bound and every key's UTF-8 is checked before the first
/// entry is handed out, so a record counts all or nothing.
enum RecordEntries {
    /// Calls `each` with every entry of `record`, or says what is wrong.
    ///
    /// `record` is a whole record, header included, its length and checksum already checked.
    /// `each` gets the key, and where its value's stored encoding lies in
    /// `record` (`nil` for a removal). Returns what is wrong instead, having called nothing.
    static func read(
        _ record: UnsafeRawBufferPointer, _ each: (_ key: StoreKey, _ value: Range<Int>?) -> Void
    ) -> RecordProblem? {
        func read32(_ at: Int) -> Int {
            Int(UInt32(littleEndian: record.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        }
        guard record.count >= JournalRecord.headerSize else {
            return RecordProblem("a record shorter than its header")
        }
        let count = read32(16)
        let length = record.count
        for pass in 0..<2 {
            var at = JournalRecord.headerSize
            for _ in 0..<count {
                guard at + 8 <= length else { return RecordProblem("an entry runs past its record") }
                let keyLength = read32(at)
                let rawValueLength = read32(at + 4)
                let isRemoval = rawValueLength == Int(JournalRecord.removal)
                let valueLength = isRemoval ? 0 : rawValueLength
                at += 8
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
                    each(StoreKey(String(decoding: keyBytes, as: UTF8.self)), value)
                }
                at += keyLength + valueLength
            }
            guard at == length else { return RecordProblem("trailing bytes in a record") }
        }
        return nil
    }
}

/// Why a record was not accepted.
struct RecordProblem: Error, CustomStringConvertible {
    let description: String
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

    init(journal: Journal, from offset: Int, to end: Int, after sequence: UInt64) {
        self.journal = journal
        self.offset = offset
        self.end = end
        lastSequence = sequence
    }

    /// The next record, decoded; `nil` at the end or at the first bad record (see ``failure``).
    mutating func next() -> JournalRecord? {
        guard let length = nextLength() else { return nil }
        // The order first: an old record left past the end is neither copied nor checked.
        guard journal.load(UInt64.self, at: offset + 8) > lastSequence else {
            return stop("the record at byte \(offset) does not follow the one before")
        }
        let bytes = journal.copyBytes(at: offset, count: length)
        let checksum = bytes.withUnsafeBytes {
            UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        }
        let actual = bytes.withUnsafeBytes { prefs_crc32c($0.baseAddress! + 8, length - 8) }
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
    mutating func nextInPlace(skipping skipped: UInt64 = 0, _ handle: (UInt64, StoreKey, ValueBytes?) -> Void)
        -> UInt64?
    {
        guard let length = nextLength() else { return nil }
        let bytes = journal.bytesInPlace(at: offset, count: length)
        let numbered = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        if numbered <= skipped && numbered > lastSequence {
            lastSequence = numbered
            offset += length + JournalRecord.padding(length)
            return numbered
        }
        let checksum = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard checksum == prefs_crc32c(bytes.baseAddress! + 8, length - 8) else {
            return stop("a record at byte \(offset) fails its checksum")
        }
        let sequence = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard sequence > lastSequence else {
            return stop("the record at byte \(offset) does not follow the one before")
        }
        let start = offset
        if let problem = RecordEntries.read(
            bytes,
            { key, value in
                handle(
                    sequence, key, value.map { ValueBytes(offset: start + $0.lowerBound, count: $0.count) })
            })
        {
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
        let sequence = journal.load(UInt64.self, at: offset + 8)
        lastSequence = sequence
        offset += length + JournalRecord.padding(length)
        return (sequence, length)
    }

    /// The length of the record at `offset` when it fits before `end`.
    private mutating func nextLength() -> Int? {
        guard failure == nil, offset + JournalRecord.headerSize <= end else { return nil }
        let length = Int(journal.load(UInt32.self, at: offset))
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
