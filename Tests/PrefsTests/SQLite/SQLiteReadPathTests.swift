import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// The SQLite store's read path: the cache's table (`KeyTable`), values decoded when first read,
/// and the slots plain values are read from without a lock (`ReadSlots`).
@Suite(.timeLimit(.minutes(10))) struct SQLiteReadPathTests {
    /// Random sets and removals on a few hundred keys (so the table grows, wraps around its end
    /// and shifts entries back on removal) agree with a dictionary after every step.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func theTableAgreesWithADictionary(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        var table = KeyTable()
        var model: [StoreKey: PropertyListValue] = [:]
        // Names of every length around a word, including canonically equivalent pairs.
        let names = (0..<300).map { index in
            index % 50 == 0
                ? "e\u{301}\(index)"
                : index % 50 == 1
                    ? "\u{E9}\(index - 1)" : String(repeating: "k", count: index % 19) + "\(index)"
        }
        for step in 0..<20_000 {
            let key = StoreKey(names[Int(random.next() % UInt64(names.count))])
            if random.next() % 3 == 0 {
                table[key] = nil
                model[key] = nil
            } else {
                let value = PropertyListValue.integer(Int64(step))
                table[key] = value
                model[key] = value
            }
            #expect(table[key] == model[key])
            #expect(table.count == model.count)
            if step % 1_000 == 0 {
                #expect(table.dictionary == model, "after step \(step)")
                #expect(Set(table.keys) == Set(model.keys))
            }
        }
        for (key, value) in model { #expect(table.value(for: key) == value) }
        #expect(table.dictionary == model)
    }

    /// Issue "Ahead of MMKV", item 2: a string of at most 15 UTF-8 bytes is kept in its slot and
    /// read back exactly, multi-byte characters included; a longer one is left to the cache.
    @Test(arguments: [
        "", "a", "dark", "élan 🌍 ok", String(repeating: "x", count: 15), ReadSlotsTestStrings.withStorage,
    ])
    func shortStringsAreReadFromTheirSlots(text: String) {
        let slots = ReadSlots()
        var name = "theme"
        name.withUTF8 { key in
            let hash = KeyTable.hash(key, seed: slots.seed)
            slots.fill(hash: hash, key: key, value: .string(text), position: 3)
            #expect(slots.value(hash: hash, key: key, journalSequence: 3) == .some(.string(text)))
            // A small string's own words only: a string with storage is kept as its bytes.
            #expect(
                slots.keepsSmallStringWords(hash: hash)
                    == (ReadSlots.smallStringWordsAreKnown && text != ReadSlotsTestStrings.withStorage))
            #expect(
                slots.value(hash: hash, key: key, journalSequence: 4) == nil, "not older than the journal")
            let long = String(repeating: "y", count: 16)
            slots.fill(hash: hash, key: key, value: .string(long), position: 5)
            #expect(slots.value(hash: hash, key: key, journalSequence: 5) == nil, "the cache answers")
        }
    }

    /// A writer makes room before the journal's lock, so the keys a catch-up adds under it do
    /// not grow the table there; the values stay where they were.
    @Test(arguments: [0, 10, 1_000, 5_000])
    func makingRoomLeavesAnEighthFreeAndEveryValue(count: Int) {
        var table = KeyTable()
        for index in 0..<count { table[StoreKey("key.\(index)")] = .integer(Int64(index)) }
        table.makeRoom()
        #expect(table.roomBeforeGrowing >= max(16, count / 8))
        #expect(table.count == count)
        for index in stride(from: 0, to: count, by: 97) {
            #expect(table[StoreKey("key.\(index)")] == .integer(Int64(index)))
        }
        let room = table.roomBeforeGrowing
        table.makeRoom()  // nothing to do: no second growth
        #expect(table.roomBeforeGrowing == room)
    }

    /// On 64-bit platforms a short string's slot keeps the small string's own words (read back
    /// with nothing to validate): the layout probe must recognise this platform's `String`, or
    /// the short-string read would quietly take the slower path.
    @Test func theSmallStringLayoutIsRecognisedOn64BitPlatforms() {
        #expect(ReadSlots.smallStringWordsAreKnown == (MemoryLayout<Int>.size == 8))
    }

    /// A key's bytes as words: every length and offset, against assembling them byte by byte.
    @Test func keyBytesBecomeWordsExactly() {
        let bytes = (0..<24).map { UInt8(0xA0 + $0) }
        for count in 0...bytes.count {
            bytes.withUnsafeBytes { all in
                let raw = UnsafeRawBufferPointer(rebasing: all[0..<count])
                for start in stride(from: 0, through: count + 8, by: 1) {
                    var expected: UInt64 = 0
                    for index in start..<min(start + 8, max(start, count)) {
                        expected |= UInt64(raw[index]) << (UInt64(index - start) * 8)
                    }
                    #expect(KeyTable.word(raw, from: start) == expected, "count \(count), start \(start)")
                }
            }
        }
    }

    /// Values added in their stored encoding decode when read, once; setting or removing one, and
    /// reading them all, gives what was stored.
    @Test func encodedValuesDecodeWhenRead() {
        var table = KeyTable()
        let values: [StoreKey: PropertyListValue] = [
            "a": .string("text"), "b": .array([.integer(1), .dictionary(["x": .bool(true)])]),
            "c": .data(Data([0, 1, 2])), "d": .double(-0.0),
        ]
        for (key, value) in values {
            let bytes = value.storedEncoding()
            bytes.withUnsafeBytes { raw in
                #expect(PropertyListValue.isStoredEncoding(raw))
                table.insert(encoded: raw, for: key)
            }
        }
        #expect(table.dictionary == values)
        #expect(table.value(for: "a") == .string("text"))
        #expect(table.value(for: "a") == .string("text"))
        table["b"] = nil
        table["c"] = .integer(3)
        #expect(table["b"] == nil)
        #expect(table.value(for: "c") == .integer(3))
        #expect(table.value(for: "d") == .double(-0.0))
        #expect(table.count == 3)
    }

    /// Reading every value of a large store adds no object per value (issue "Ahead of MMKV",
    /// item 4).
    ///
    /// Numbers and short strings replace their bytes; longer strings, data and collections stay
    /// as bytes, with only the last few hundred decoded kept.
    @Test func readingEveryValueKeepsNoObjectPerValue() {
        var table = KeyTable()
        var expected: [StoreKey: PropertyListValue] = [:]
        for index in 0..<3_000 {
            let value: PropertyListValue =
                switch index % 3 {
                case 0: .string("value number \(index)")
                case 1: .integer(Int64(index))
                default: .string("s\(index)")
                }
            expected[StoreKey("key.\(index)")] = value
            value.storedEncoding().withUnsafeBytes {
                table.insert(encoded: $0, for: StoreKey("key.\(index)"))
            }
        }
        for _ in 0..<2 {
            for (key, value) in expected { #expect(table.value(for: key) == value) }
        }
        #expect(table.decodedObjectCount <= KeyTable.recentlyDecodedCount)
        #expect(table.dictionary == expected)
    }

    /// Values kept as bytes and remembered once decoded stay right through sets, removals (which
    /// move the last entry into the hole) and new bytes: every step agrees with a dictionary.
    @Test(arguments: [5, 6, 7] as [UInt64])
    func rememberedDecodedValuesFollowEveryChange(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        var table = KeyTable()
        var model: [StoreKey: PropertyListValue] = [:]
        let names = (0..<600).map { StoreKey("key.\($0)") }
        for step in 0..<30_000 {
            let key = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 5 {
            case 0:
                table[key] = nil
                model[key] = nil
            case 1:
                table[key] = .integer(Int64(step))
                model[key] = .integer(Int64(step))
            case 2:
                let value = PropertyListValue.string("a longer value, step \(step)")
                value.storedEncoding().withUnsafeBytes { table.insert(encoded: $0, for: key) }
                model[key] = value
            default:
                #expect(table.value(for: key) == model[key], "step \(step)")
            }
        }
        for (key, value) in model { #expect(table.value(for: key) == value) }
        #expect(table.dictionary == model)
    }

    /// The check at opening refuses what decoding refuses.
    @Test func theCheckRefusesWhatDecodingRefuses() {
        let samples: [[UInt8]] = [
            [], [0xFF], [0x05, 0x02, 0xC3], [0x05, 0x05, 0x61], [0x08, 0x02, 0x03],
            [0x03, 1, 2, 3], [0x01, 0x01], [0x09, 0x01, 0x01, 0x61, 0x01],
        ]
        for bytes in samples {
            let decodes = bytes.withUnsafeBytes { (try? PropertyListValue(storedEncodingBytes: $0)) != nil }
            #expect(bytes.withUnsafeBytes { PropertyListValue.isStoredEncoding($0) } == decodes, "\(bytes)")
        }
    }

    /// A reopened store answers every kind of value as stored (decoded when first read).
    @Test func aReopenedStoreReadsEveryKindOfValue() throws {
        let path = TestFiles.uniquePath("lazy")
        let values: [String: PropertyListValue] = [
            "bool": .bool(true), "int": .integer(-7), "double": .double(2.5), "string": .string("é"),
            "date": .date(Date(timeIntervalSinceReferenceDate: 12.5)), "data": .data(Data([9])),
            "array": .array([.string("x")]), "dict": .dictionary(["k": .integer(1)]),
        ]
        do {
            let store = try SQLiteStore(path: path)
            try store.transaction { t in for (key, value) in values { t[key] = value } }
        }
        let reopened = try SQLiteStore(path: path)
        for (key, value) in values {
            #expect(reopened.value(forKey: key) == value)
            #expect(reopened.value(forKey: key) == value)
        }
        #expect(reopened.snapshot().count == values.count)
    }

    /// Opening fills the cache on a second thread, in chunks of rows: a store of many chunks,
    /// keys of every length (non-ASCII too), values of several kinds, removed keys and one value
    /// no release can decode all come back as stored, the undecodable one left out.
    @Test func aLargeStoreOpensWithEveryValueAsStored() throws {
        let path = TestFiles.uniquePath("chunks")
        var expected: [StoreKey: PropertyListValue] = [:]
        for index in 0..<10_000 {
            let key = StoreKey(
                String(repeating: index % 7 == 0 ? "é" : "k", count: 1 + index % 40) + "\(index)")
            switch index % 4 {
            case 0: expected[key] = .integer(Int64(index))
            case 1: expected[key] = .string(String(repeating: "v", count: index % 300))
            case 2: expected[key] = .array([.double(Double(index)), .bool(index % 3 == 0)])
            default: expected[key] = .data(Data(repeating: UInt8(index % 256), count: index % 17))
            }
        }
        do {
            let store = try SQLiteStore(path: path)
            try store.transaction { t in
                for (key, value) in expected { t[key.name] = value }
                t["removed"] = .integer(1)
            }
            try store.setValue(nil, forKey: "removed")
            try store.flush()
        }
        // A value in no stored encoding (a newer release's, or damage), written behind the store.
        let connection = try SQLiteConnection(path: path)
        try connection.run(
            "INSERT INTO prefs_entries(key, value, seq) VALUES ('undecodable', x'FF01', 1)")
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.snapshot() == expected)
        #expect(reopened.value(forKey: "undecodable") == nil)
        #expect(reopened.value(forKey: "removed") == nil)
    }

    /// A thread reading while another writes never sees a value older than one whose write had
    /// returned, nor values going backwards: for plain values (read from the slots), strings
    /// (through the lock), a key longer than a slot holds, and a key that comes and goes.
    @Test func readsFollowWritesFromAnotherThread() async throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath("slots"))
        let longKey = String(repeating: "long", count: 12)
        let acknowledged = Locked(-1)
        let writes = 20_000
        let writer = Task.detached {
            for index in 0..<writes {
                try store.transaction { t in
                    t["n"] = .integer(Int64(index))
                    t["s"] = .string("\(index)")
                    t["long-string"] = .string("\(index) " + String(repeating: "z", count: 20))
                    t[longKey] = .integer(Int64(index))
                    t["comes-and-goes"] = index % 2 == 0 ? .integer(Int64(index)) : nil
                }
                acknowledged.withLock { $0 = index }
            }
        }
        var failures: [String] = []
        var last = -1
        while last < writes - 1 && failures.count < 5 {
            let floor = acknowledged.withLock { $0 }
            func number(_ key: String) -> Int {
                switch store.value(forKey: key) {
                case .integer(let n): Int(n)
                case .string(let text): Int(text) ?? -2
                default: -1
                }
            }
            let n = number("n")
            if n < floor || n < last { failures.append("n = \(n) after \(floor) returned, \(last) read") }
            if number("s") < floor { failures.append("s behind \(floor)") }
            if case .string(let text)? = store.value(forKey: "long-string"),
                (Int(text.prefix { $0 != " " }) ?? -2) < floor
            {
                failures.append("long-string behind \(floor)")
            }
            if number(longKey) < floor { failures.append("long key behind \(floor)") }
            let comesAndGoes = store.value(forKey: "comes-and-goes")
            if floor >= 0 && floor == acknowledged.withLock({ $0 }) && floor == number("n") {
                // Nothing was written between the two loads: the key is exactly as the last write left it.
                let expected: PropertyListValue? = floor % 2 == 0 ? .integer(Int64(floor)) : nil
                if comesAndGoes != expected && floor == acknowledged.withLock({ $0 }) {
                    failures.append("comes-and-goes \(String(describing: comesAndGoes)) after \(floor)")
                }
            }
            last = max(last, n)
        }
        try await writer.value  // rethrows the writer's error
        #expect(failures.isEmpty, "\(failures)")
        #expect(store.value(forKey: "n") == .integer(Int64(writes - 1)))
        #expect(store.value(forKey: "comes-and-goes") == nil)
    }
}

/// Strings for the read slots' tests.
enum ReadSlotsTestStrings {
    /// A short string with storage of its own (not a small string): its slot keeps its bytes.
    static var withStorage: String {
        var text = String()
        text.reserveCapacity(64)
        text += "stored"
        return text
    }
}
