import CPrefsShared
import PrefsModel

/// The values of a store's cache by key: a hash table built for the read path and for opening
/// a large store.
///
/// A `[StoreKey: PropertyListValue]` dictionary spends most of a lookup in SipHash (`Hasher`)
/// and, because it keeps no hashes, compares the key's bytes with every entry it probes; filling
/// it writes its large arrays in random order, a cache miss per row. This table hashes a key's
/// UTF-8 bytes with a short multiply-and-mix function seeded once per process and keeps:
///
/// - `entries`: the keys and values, densely, in the order they were added (filling the table is
///   appending; a removal moves the last entry into the hole);
/// - `slots`: open addressing with linear probing over a power-of-two number of 64-bit words,
///   at most 7/8 full, each holding the upper 32 bits of its key's hash (which also choose its
///   bucket) and its entry's index plus one (`0` is an empty slot). A lookup compares key bytes
///   only when those 32 bits match, and the slots alone are enough to grow the table or to shift
///   entries back on removal (no tombstones: a table that sees many writes never slows down);
/// - `encodedBytes`: values as a store read them from its file, still in their stored encoding
///   (checked, not yet decoded). Opening a large store appends each row's bytes here instead of
///   building a value (a string is an allocation each). A value that needs no object of its own
///   (a number, a boolean, a date, a string short enough to be a small string) replaces its bytes
///   the first time it is read; any other (a longer string, data, a collection) stays as bytes,
///   so reading every value of a large store adds no object per value, and the last few hundred
///   of those decoded are kept in `recentlyDecoded` for the next read. The bytes are let go once
///   no entry needs them.
///
/// The seed is random per process: a hash of attacker-chosen keys cannot be precomputed across
/// runs. Not a cryptographic hash; keys come from the program and its own stores.
///
/// ```swift
/// var table = KeyTable()
/// table["volume"] = .double(0.5)
/// table["volume"]  // .double(0.5)
/// ```
struct KeyTable: Sendable {
    private var slots: ContiguousArray<UInt64>
    private var entries: ContiguousArray<Entry>
    private var encodedBytes: ContiguousArray<UInt8> = []
    /// How many entries still point into `encodedBytes`.
    private var encodedCount = 0
    /// Values decoded from `encodedBytes` that have an object of their own, by entry index
    /// (direct-mapped; made at the first such read).
    private var recentlyDecoded: ContiguousArray<RecentlyDecoded> = []
    private let seed: UInt64

    private struct RecentlyDecoded {
        var index = -1
        var value = PropertyListValue.bool(false)
    }
    static let recentlyDecodedCount = 256

    private struct Entry {
        var key: StoreKey
        var value: Stored
    }

    private enum Stored {
        case value(PropertyListValue)
        /// Checked stored encoding at `start..<start + count` in `encodedBytes`.
        case encoded(start: UInt32, count: UInt32)
    }

    /// The seed of every table's hash in this process.
    static let processSeed = UInt64.random(in: .min ... .max)

    /// Told of every change, so it never answers with a value this table no longer holds.
    var readSlots: ReadSlots?

    /// An empty table with room for `minimumCapacity` entries before it grows.
    init(minimumCapacity: Int = 0) {
        var buckets = 8
        while buckets - buckets / 8 < minimumCapacity { buckets *= 2 }
        slots = ContiguousArray(repeating: 0, count: buckets)
        entries = []
        entries.reserveCapacity(minimumCapacity)
        seed = Self.processSeed
    }

    /// The number of entries stored.
    var count: Int { entries.count }

    /// The value under `key`; assigning `nil` removes it.
    ///
    /// Reading decodes a value still in its stored encoding each time: the read path uses
    /// ``value(for:)``, which keeps what it decoded.
    subscript(key: StoreKey) -> PropertyListValue? {
        get {
            guard let slot = slot(of: key, tag: tag(key)) else { return nil }
            return decoded(entries[Self.index(slots[slot])].value)
        }
        set { set(newValue, for: key, hash: Self.hash(key.name, seed: seed)) }
    }

    /// Sets the value under `key`, given its ``hash(_:seed:)`` (a write computes it once).
    mutating func set(_ value: PropertyListValue?, for key: StoreKey, hash: UInt64) {
        readSlots?.invalidate(hash: hash)
        let tag = UInt32(truncatingIfNeeded: hash >> 32)
        if let slot = slot(of: key, tag: tag) {
            let index = Self.index(slots[slot])
            forget(entries[index].value, at: index)
            if let value {
                entries[index].value = .value(value)
            } else {
                remove(at: slot)
            }
        } else if let value {
            insert(Entry(key: key, value: .value(value)), tag: tag)
        }
    }

    /// Starts bringing into the processor's caches what a write of the key with this hash will
    /// touch, in two steps taken well before the write: its slot, then (once the slot is there)
    /// the entry a slot with the key's tag points at.
    ///
    /// In a large table both are cache misses, one after the other (the slot says where the
    /// entry is); fetched during the write's other work (the file check, the journal's lock,
    /// encoding and appending the record), a write costs about what it does in a small table.
    /// Only hints: nothing is read that the lookup itself would not read.
    func prefetch(hash: UInt64, step: PrefetchStep) {
        let bucket = Self.bucket(hash, mask: slots.count - 1)  // a slot's upper half is its hash's
        switch step {
        case .slot:
            slots.withUnsafeBufferPointer { prefs_prefetch_for_write($0.baseAddress! + bucket) }
        case .entry:
            // The key's slot is often not its bucket's (at 100,000 keys three quarters of the
            // slots are taken): probed as a lookup does, in the line the first step fetched.
            let tag = UInt32(truncatingIfNeeded: hash >> 32)
            let mask = slots.count - 1
            var probe = bucket
            var slot = slots[probe]
            while slot != 0 && UInt32(truncatingIfNeeded: slot >> 32) != tag {
                probe = (probe + 1) & mask
                slot = slots[probe]
            }
            guard slot != 0 else { return }
            // Both ends: an entry (40 bytes) lies across two cache lines every other time.
            entries.withUnsafeBufferPointer { entries in
                let entry = UnsafeRawPointer(entries.baseAddress! + Self.index(slot))
                prefs_prefetch_for_write(entry)
                prefs_prefetch_for_write(entry + (MemoryLayout<Entry>.size - 1))
            }
        }
    }

    /// The two steps of ``prefetch(hash:step:)``.
    enum PrefetchStep { case slot, entry }

    /// How many keys can be added before the table grows.
    var roomBeforeGrowing: Int { min(slots.count - slots.count / 8, entries.capacity) - entries.count }

    /// Grows the table now when the next few inserts would make it grow (by an eighth of its
    /// size, at least 16): a writer calls it before taking the journal's lock, so that catching
    /// up with other processes' new keys under that lock rarely has to grow a large table there
    /// (a copy and fresh pages: a quarter of a millisecond at a few thousand keys, while every
    /// other writer of the file waited).
    mutating func makeRoom() {
        let needed = entries.count + max(16, entries.count / 8)
        while needed > slots.count - slots.count / 8 { grow() }
        if needed > entries.capacity { entries.reserveCapacity(max(needed, entries.capacity * 2)) }
    }

    /// The value under `key`, decoding it (once) if it is still in its stored encoding.
    @inline(__always)
    mutating func value(for key: StoreKey) -> PropertyListValue? {
        value(for: key, hash: Self.hash(key.name, seed: seed))
    }

    /// The same, given the key's ``hash(_:seed:)`` with this process's seed.
    @inline(__always)
    mutating func value(for key: StoreKey, hash: UInt64) -> PropertyListValue? {
        guard let slot = slot(of: key, tag: UInt32(truncatingIfNeeded: hash >> 32)) else { return nil }
        let index = Self.index(slots[slot])
        if case .value(let value) = entries[index].value { return value }
        if let value = recentlyDecoded(at: index) { return value }
        guard let value = decoded(entries[index].value) else {
            // Checked when it was added: a failure here would mean memory was damaged; the key
            // then reads as missing rather than crashing.
            forget(entries[index].value, at: index)
            readSlots?.invalidate(hash: hash)
            remove(at: slot)
            return nil
        }
        if value.needsNoObject {
            forget(entries[index].value, at: index)
            entries[index].value = .value(value)
        } else {
            remember(value, decodedAt: index)
        }
        return value
    }

    /// Adds `key` with a value in its stored encoding, which the caller has checked with
    /// `PropertyListValue.isStoredEncoding(_:)`: it is decoded when first read.
    mutating func insert(encoded bytes: UnsafeRawBufferPointer, for key: StoreKey) {
        let hash = Self.hash(key.name, seed: seed)
        readSlots?.invalidate(hash: hash)
        let tag = UInt32(truncatingIfNeeded: hash >> 32)
        if let slot = slot(of: key, tag: tag) {
            let index = Self.index(slots[slot])
            forget(entries[index].value, at: index)
            remove(at: slot)
        }
        guard encodedBytes.count + bytes.count <= UInt32.max else {
            // More than 4 GiB at once: the rest is decoded now.
            self[key] = try? PropertyListValue(storedEncodingBytes: bytes)
            return
        }
        let stored = Stored.encoded(start: UInt32(encodedBytes.count), count: UInt32(bytes.count))
        encodedBytes.append(contentsOf: bytes)
        encodedCount += 1
        insert(Entry(key: key, value: stored), tag: tag)
    }

    /// Room for `count` bytes of values added in their stored encoding.
    mutating func reserveEncodedCapacity(_ count: Int) {
        encodedBytes.reserveCapacity(count)
    }

    /// Every key stored, in no particular order.
    var keys: [StoreKey] { entries.map(\.key) }

    /// Every key's name, in no particular order (one array, for listing a large store).
    var names: [String] { entries.map(\.key.name) }

    /// How many decoded values with an object of their own the table holds (for tests: reading
    /// values kept as bytes adds at most ``recentlyDecodedCount``).
    var decodedObjectCount: Int {
        entries.count { entry in
            if case .value(let value) = entry.value { !value.needsNoObject } else { false }
        } + recentlyDecoded.count { $0.index >= 0 }
    }

    /// Every entry, as a dictionary.
    var dictionary: [StoreKey: PropertyListValue] {
        var dictionary: [StoreKey: PropertyListValue] = [:]
        dictionary.reserveCapacity(count)
        for entry in entries { dictionary[entry.key] = decoded(entry.value) }
        return dictionary
    }

    // MARK: - Inside

    private func decoded(_ stored: Stored) -> PropertyListValue? {
        switch stored {
        case .value(let value): return value
        case .encoded(let start, let count):
            // Where this table put the bytes in its own buffer, whose count is an Int.
            let from = Int(truncatingIfNeeded: start)
            return encodedBytes.withUnsafeBytes { all in
                try? PropertyListValue(
                    storedEncodingBytes: UnsafeRawBufferPointer(
                        rebasing: all[from..<(from + Int(truncatingIfNeeded: count))])
                )
            }
        }
    }

    /// Notes that the entry at `index` no longer points into `encodedBytes` (the last one lets
    /// them go) and that its decoded value is stale.
    private mutating func forget(_ stored: Stored, at index: Int) {
        guard case .encoded = stored else { return }
        forgetDecoded(at: index)
        encodedCount -= 1
        if encodedCount == 0 {
            encodedBytes = []
            recentlyDecoded = []
        }
    }

    @inline(__always)
    private func recentlyDecoded(at index: Int) -> PropertyListValue? {
        guard !recentlyDecoded.isEmpty else { return nil }
        let recent = recentlyDecoded[index & (Self.recentlyDecodedCount - 1)]
        return recent.index == index ? recent.value : nil
    }

    private mutating func remember(_ value: PropertyListValue, decodedAt index: Int) {
        if recentlyDecoded.isEmpty {
            recentlyDecoded = ContiguousArray(repeating: RecentlyDecoded(), count: Self.recentlyDecodedCount)
        }
        recentlyDecoded[index & (Self.recentlyDecodedCount - 1)] = RecentlyDecoded(index: index, value: value)
    }

    /// Drops what is remembered for the entry at `index` (its value changed, or another entry
    /// takes its index).
    private mutating func forgetDecoded(at index: Int) {
        guard !recentlyDecoded.isEmpty,
            recentlyDecoded[index & (Self.recentlyDecodedCount - 1)].index == index
        else { return }
        recentlyDecoded[index & (Self.recentlyDecodedCount - 1)] = RecentlyDecoded()
    }

    /// The seeded hash of a key's UTF-8 bytes, eight at a time (``ReadSlots`` uses it too).
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hash = seed ^ (UInt64(bytes.count) &* multiplier)
        let raw = UnsafeRawBufferPointer(bytes)
        var offset = 0
        // Every word but the last is mixed in; the last (1 to 8 bytes) is mixed by the final
        // round, so a key of up to 8 bytes — most keys — costs one round on the read path.
        while raw.count - offset > 8 {
            hash = mix(
                hash ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        return mix(hash ^ word(raw, from: offset))
    }

    /// The bytes `start..<min(start + 8, count)` as a little-endian word, zero past the end: at
    /// most three loads (4, 2 and 1 bytes), never a byte outside the buffer.
    @inline(__always)
    static func word(_ raw: UnsafeRawBufferPointer, from start: Int) -> UInt64 {
        let count = raw.count - start
        if count <= 0 { return 0 }
        if count >= 8 {
            return UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self))
        }
        var word: UInt64 = 0
        var offset = start
        var shift: UInt64 = 0
        if count & 4 != 0 {
            word = UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += 4
            shift = 32
        }
        if count & 2 != 0 {
            word |=
                UInt64(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
                << shift
            offset += 2
            shift += 16
        }
        if count & 1 != 0 { word |= UInt64(raw[offset]) << shift }
        return word
    }

    /// The same for a name.
    @inline(__always)
    static func hash(_ name: String, seed: UInt64) -> UInt64 {
        var name = name
        return name.withUTF8 { hash($0, seed: seed) }
    }

    /// One round of a 64-bit multiply-and-xorshift mix (as in MurmurHash3's finalizer).
    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var value = value
        value ^= value >> 33
        value &*= 0xFF51_AFD7_ED55_8CCD
        value ^= value >> 33
        return value
    }

    /// The upper 32 bits of the key's hash (a slot is never `0` all the same: it holds the
    /// entry's index plus one).
    @inline(__always)
    private func tag(_ key: StoreKey) -> UInt32 {
        UInt32(truncatingIfNeeded: Self.hash(key.name, seed: seed) >> 32)
    }

    @inline(__always)
    private static func index(_ slot: UInt64) -> Int { Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) - 1 }

    @inline(__always)
    private static func slot(tag: UInt32, index: Int) -> UInt64 { UInt64(tag) << 32 | UInt64(index + 1) }

    @inline(__always)
    private static func bucket(_ slot: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: slot >> 32) & mask
    }

    /// The slot that points at `key`'s entry, if there is one.
    @inline(__always)
    private func slot(of key: StoreKey, tag: UInt32) -> Int? {
        let mask = slots.count - 1
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while true {
            let slot = slots[bucket]
            if slot == 0 { return nil }
            if UInt32(truncatingIfNeeded: slot >> 32) == tag && entries[Self.index(slot)].key == key {
                return bucket
            }
            bucket = (bucket + 1) & mask
        }
    }

    private mutating func insert(_ entry: Entry, tag: UInt32) {
        if entries.count + 1 > slots.count - slots.count / 8 { grow() }
        let mask = slots.count - 1
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while slots[bucket] != 0 { bucket = (bucket + 1) & mask }
        slots[bucket] = Self.slot(tag: tag, index: entries.count)
        entries.append(entry)
    }

    /// Removes the entry `slot` points at: empties the slot, moves back each following slot that
    /// its own bucket allows (so every slot stays reachable from its bucket without passing an
    /// empty one), then moves the last entry into the hole the removed one left.
    private mutating func remove(at slot: Int) {
        let removed = Self.index(slots[slot])
        let mask = slots.count - 1
        var hole = slot
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let ideal = Self.bucket(slots[next], mask: mask)
            // The slot at `next` may fill the hole unless its bucket lies cyclically in
            // (hole, next]: moving it before its bucket would hide it.
            let staysPut = hole <= next ? (hole < ideal && ideal <= next) : (hole < ideal || ideal <= next)
            if !staysPut {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = 0
        let last = entries.count - 1
        forgetDecoded(at: removed)
        forgetDecoded(at: last)
        if removed != last {
            let lastTag = tag(entries[last].key)
            var bucket = Int(truncatingIfNeeded: lastTag) & mask
            while Self.index(slots[bucket]) != last { bucket = (bucket + 1) & mask }
            slots[bucket] = Self.slot(tag: lastTag, index: removed)
            entries.swapAt(removed, last)
        }
        entries.removeLast()
    }

    /// Twice the slots, filled from the old ones alone (their tags choose their buckets).
    private mutating func grow() {
        let old = slots
        slots = ContiguousArray(repeating: 0, count: old.count * 2)
        let mask = slots.count - 1
        for slot in old where slot != 0 {
            var bucket = Self.bucket(slot, mask: mask)
            while slots[bucket] != 0 { bucket = (bucket + 1) & mask }
            slots[bucket] = slot
        }
    }
}

extension PropertyListValue {
    /// Whether the value is held entirely inline: a number, a boolean, a date, or a string short
    /// enough for Swift to keep as a small string (15 UTF-8 bytes on 64-bit platforms, 10 on
    /// 32-bit ones).
    fileprivate var needsNoObject: Bool {
        switch self {
        case .bool, .integer, .unsignedInteger, .double, .date: true
        case .string(let text): text.utf8.count <= (MemoryLayout<Int>.size == 8 ? 15 : 10)
        case .data, .array, .dictionary: false
        }
    }
}
