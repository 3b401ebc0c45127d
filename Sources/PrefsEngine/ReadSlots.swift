import CPrefsShared
import Foundation
import PrefsModel

/// Recently read plain values of a store, readable without taking any lock: a read of a number,
/// a boolean, a date or a missing key costs a few loads instead of the cache's lock.
///
/// An uncontended lock is two atomic read-modify-write instructions, about as long as the rest of
/// a read together. So a store keeps, beside its cache, a small direct-mapped table of slots, each
/// a sequence lock over a few words: the key (up to 40 UTF-8 bytes, compared exactly), its hash,
/// the value's kind and bits, and the journal sequence number the cache was at when the slot was
/// filled. Only values without references fit (nothing to retain, so nothing a writer could free
/// under a reader): `bool`, `integer`, `double`, `date`, a string of at most 15 UTF-8 bytes, and
/// "no value".
///
/// A short string is kept as the two words of the small string Swift makes of it (which hold its
/// bytes and length inline, and no reference), so a read hands back those very words with
/// nothing to check or copy: the bytes were valid UTF-8 when the slot was filled. This relies on
/// the layout of `String` on 64-bit platforms (part of the ABI on Apple platforms), checked once
/// per process by ``smallStringWordsAreKnown``, and on each fill: only a string whose words say
/// "immortal small string" is kept so. Otherwise (32-bit platforms, a string with storage of its
/// own) the slot keeps the string's bytes and a read rebuilds it, validating them again.
///
/// Invariants (every write to a slot holds the cache's lock):
///
/// 1. A slot filled at position `P` holds the cache's value for its key when the cache had
///    applied every journal record up to `P` and none after.
/// 2. A reader takes a slot's answer only when `P` is at least the journal's sequence number as
///    it loaded it after the read began: every write that returned before the read began (here
///    or in another process) has a sequence number no greater, so it was applied before the fill.
/// 3. Whenever the cache's value for a key changes, the slot its hash maps to is emptied (the
///    cache's table does this on every change), so a slot never outlives its value even when
///    the journal's sequence number does not move.
/// 4. Readers take a slot's words only between two equal, even loads of its sequence word.
///
/// ```swift
/// let slots = ReadSlots()
/// let name = Array("launchCount".utf8)
/// name.withUnsafeBufferPointer { key in
///     let hash = KeyTable.hash(key, seed: slots.seed)
///     slots.fill(hash: hash, key: key, value: .integer(1), position: 7)
///     _ = slots.value(hash: hash, key: key, journalSequence: 7)  // .some(.integer(1))
/// }
/// ```
final class ReadSlots: @unchecked Sendable {
    /// The seed of key hashes (the process's, shared with ``KeyTable``).
    var seed: UInt64 { reader.seed }
    private let words: UnsafeMutablePointer<UInt64>
    /// What a read needs, without retaining this object.
    let reader: Reader

    private static let slotCount = 128
    private static let wordsPerSlot = 11
    /// Longest key a slot holds (5 words).
    static let maximumKeyLength = 40

    // Word offsets within a slot (word 0 is the slot's sequence word).
    private static let positionWord = 1
    private static let hashWord = 2
    /// The value's kind in the low byte, the key's length in the next, a short string's length in
    /// the third.
    private static let shapeWord = 3
    /// A number's bits, or a short string's first 8 bytes (the next 7 are in `stringWord`).
    private static let bitsWord = 4
    private static let keyWords = 5
    private static let stringWord = 10
    /// Longest string a slot holds: a small string, which needs no allocation to rebuild.
    static let maximumStringLength = 15

    /// Whether `String` lays out a small string as this type expects (probed once per process).
    ///
    /// Expected: two little-endian words, the UTF-8 bytes from the first byte on, and the top
    /// byte of the second word holding the flags "immortal" (bit 7) and "small" (bit 5) and the
    /// length (bits 0–3), while a string with storage of its own is not immortal.
    static let smallStringWordsAreKnown: Bool = {
        guard MemoryLayout<String>.size == 16, MemoryLayout<Int>.size == 8, UInt64(1).littleEndian == 1 else {
            return false
        }
        let small = String(decoding: [0x61, 0x62, 0xC3, 0xA9], as: UTF8.self)  // "abé"
        let words = unsafeBitCast(small, to: (UInt64, UInt64).self)
        let stored = String(repeating: "x", count: 40)
        return isImmortalSmall(words, count: 4) && words.0 == 0xA9C3_6261
            && unsafeBitCast(stored, to: (UInt64, UInt64).self).1 >> 63 == 0
            && unsafeBitCast(words, to: String.self) == "ab\u{E9}"
    }()

    /// Whether a string's two words are those of an immortal small string of `count` bytes.
    private static func isImmortalSmall(_ words: (UInt64, UInt64), count: Int) -> Bool {
        let top = words.1 >> 56
        return top & 0xA0 == 0xA0 && Int(truncatingIfNeeded: top & 0x0F) == count
    }

    init() {
        let count = Self.slotCount * Self.wordsPerSlot
        words = .allocate(capacity: count)
        words.initialize(repeating: 0, count: count)
        reader = Reader(words: words, seed: KeyTable.processSeed)
    }

    deinit { words.deallocate() }

    /// What a read needs of the slots, as plain values: a read copies it out of the cache
    /// and retains nothing (a retain and a release of the slots were a fifth of a read).
    ///
    /// Valid while its slots live: ``StoreCache`` keeps both for as long as it lives, and a
    /// read holds the store. `@unchecked Sendable`: the words it points at are only ever
    /// accessed atomically.
    struct Reader: @unchecked Sendable {
        fileprivate let words: UnsafeMutablePointer<UInt64>
        /// The seed of key hashes (the process's, shared with ``KeyTable``).
        let seed: UInt64

        /// The answer a slot holds for the key, or `nil` when the cache must be asked.
        @inline(__always)
        func answer(hash: UInt64, key: UnsafeBufferPointer<UInt8>, journalSequence: UInt64)
            -> SlotAnswer?
        {
            guard key.count <= ReadSlots.maximumKeyLength else { return nil }
            let slot = self.slot(hash)
            let sequence = prefs_atomic_load64(slot)
            guard sequence & 1 == 0,
                prefs_atomic_load64_relaxed(slot + ReadSlots.positionWord) >= journalSequence,
                prefs_atomic_load64_relaxed(slot + ReadSlots.hashWord) == hash
            else { return nil }
            let shape = prefs_atomic_load64_relaxed(slot + ReadSlots.shapeWord)
            let kind = SlotKind(rawValue: UInt8(truncatingIfNeeded: shape))
            guard shape >> 8 & 0xFF == UInt64(key.count), keyMatches(key, slot), kind != .empty else {
                return nil
            }
            let bits = prefs_atomic_load64_relaxed(slot + ReadSlots.bitsWord)
            // The string's second word only for a string: a number's read stays as short as it was.
            let more = kind >= .string ? prefs_atomic_load64_relaxed(slot + ReadSlots.stringWord) : 0
            prefs_atomic_fence_acquire()
            guard prefs_atomic_load64_relaxed(slot) == sequence else { return nil }
            return SlotAnswer(shape: shape, bits: bits, more: more)
        }

        /// The answer as a stored value: `.some(nil)` means no value is stored.
        @inline(__always)
        func value(hash: UInt64, key: UnsafeBufferPointer<UInt8>, journalSequence: UInt64)
            -> PropertyListValue??
        {
            answer(hash: hash, key: key, journalSequence: journalSequence).map(\.value)
        }

        @inline(__always)
        fileprivate func slot(_ hash: UInt64) -> UnsafeMutablePointer<UInt64> {
            words + Int(truncatingIfNeeded: hash & UInt64(ReadSlots.slotCount - 1)) * ReadSlots.wordsPerSlot
        }

        @inline(__always)
        private func keyMatches(_ key: UnsafeBufferPointer<UInt8>, _ slot: UnsafeMutablePointer<UInt64>)
            -> Bool
        {
            for index in 0..<(key.count + 7) / 8
            where prefs_atomic_load64_relaxed(slot + ReadSlots.keyWords + index)
                != ReadSlots.keyWord(key, index)
            {
                return false
            }
            return true
        }
    }

    /// The answer a slot holds for the key (see ``Reader/value(hash:key:journalSequence:)``).
    func value(hash: UInt64, key: UnsafeBufferPointer<UInt8>, journalSequence: UInt64) -> PropertyListValue??
    {
        reader.value(hash: hash, key: key, journalSequence: journalSequence)
    }

    /// Remembers the cache's value for a key at `position` (holding the cache's lock), when it
    /// is a plain value and the key is short enough; otherwise leaves the slot as it is.
    func fill(
        hash: UInt64, key: UnsafeBufferPointer<UInt8>, value: PropertyListValue?, position: UInt64
    ) {
        guard key.count <= Self.maximumKeyLength else { return }
        let kind: SlotKind
        let bits: UInt64
        switch value {
        case nil: (kind, bits) = (.missing, 0)
        case .bool(let flag): (kind, bits) = (.bool, flag ? 1 : 0)
        case .integer(let number): (kind, bits) = (.integer, UInt64(bitPattern: number))
        case .double(let number): (kind, bits) = (.double, number.bitPattern)
        case .date(let date): (kind, bits) = (.date, date.timeIntervalSinceReferenceDate.bitPattern)
        case .string(let text):
            guard let (words, kind) = Self.stringWords(text) else { return }
            let slot = self.slot(hash)
            write(slot) {
                fillKey(
                    slot, hash: hash, key: key, position: position,
                    shape: UInt64(words.count) << 16 | kind.shape)
                prefs_atomic_store64_relaxed(slot + Self.bitsWord, words.first)
                prefs_atomic_store64_relaxed(slot + Self.stringWord, words.second)
            }
            return
        case .unsignedInteger, .data, .array, .dictionary: return
        }
        let slot = self.slot(hash)
        write(slot) {
            fillKey(slot, hash: hash, key: key, position: position, shape: kind.shape)
            prefs_atomic_store64_relaxed(slot + Self.bitsWord, bits)
        }
    }

    /// The words every filled slot has: position, hash, shape (with the key's length), key.
    private func fillKey(
        _ slot: UnsafeMutablePointer<UInt64>, hash: UInt64, key: UnsafeBufferPointer<UInt8>, position: UInt64,
        shape: UInt64
    ) {
        prefs_atomic_store64_relaxed(slot + Self.positionWord, position)
        prefs_atomic_store64_relaxed(slot + Self.hashWord, hash)
        prefs_atomic_store64_relaxed(slot + Self.shapeWord, UInt64(key.count) << 8 | shape)
        for index in 0..<Self.maximumKeyLength / 8 {
            prefs_atomic_store64_relaxed(slot + Self.keyWords + index, Self.keyWord(key, index))
        }
    }

    /// A short string as two words, or `nil` when it is too long.
    ///
    /// Its own words when it is an immortal small string; else its UTF-8 bytes.
    private static func stringWords(_ text: String) -> (
        words: (first: UInt64, second: UInt64, count: Int), kind: SlotKind
    )? {
        var text = text
        let count = text.utf8.count
        guard count <= maximumStringLength else { return nil }
        if smallStringWordsAreKnown {
            let own = unsafeBitCast(text, to: (UInt64, UInt64).self)
            if isImmortalSmall(own, count: count) { return ((own.0, own.1, count), .smallString) }
        }
        return text.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            return ((KeyTable.word(raw, from: 0), KeyTable.word(raw, from: 8), count), .string)
        }
    }

    /// Whether the slot for this hash keeps a small string's own words (for tests).
    func keepsSmallStringWords(hash: UInt64) -> Bool {
        prefs_atomic_load64_relaxed(slot(hash) + Self.shapeWord) & 0xFF == SlotKind.smallString.shape
    }

    /// Empties the slot a key with this hash maps to (holding the cache's lock).
    func invalidate(hash: UInt64) {
        let slot = self.slot(hash)
        guard prefs_atomic_load64_relaxed(slot + Self.shapeWord) & 0xFF != SlotKind.empty.shape else {
            return
        }
        write(slot) { prefs_atomic_store64_relaxed(slot + Self.shapeWord, SlotKind.empty.shape) }
    }

    // MARK: - Inside

    @inline(__always)
    private func slot(_ hash: UInt64) -> UnsafeMutablePointer<UInt64> { reader.slot(hash) }

    /// A sequence lock's write: odd while the words change, even (and one step on) after.
    private func write(_ slot: UnsafeMutablePointer<UInt64>, _ body: () -> Void) {
        let sequence = prefs_atomic_load64_relaxed(slot)
        prefs_atomic_store64_relaxed(slot, sequence &+ 1)
        prefs_atomic_fence_release()
        body()
        prefs_atomic_store64(slot, sequence &+ 2)
    }

    /// The key's bytes `8 * index ..< 8 * index + 8`, little-endian, zero past its end.
    @inline(__always)
    private static func keyWord(_ key: UnsafeBufferPointer<UInt8>, _ index: Int) -> UInt64 {
        KeyTable.word(UnsafeRawBufferPointer(key), from: index * 8)
    }
}
