import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// What a checkpoint moves into SQLite: each key's last write, in the order of SQLite's key
/// index (`LatestWrites`, keyed by the bytes of the keys in the journal).
@Suite(.timeLimit(.minutes(10))) struct CheckpointerTests {
    /// Keys that differ only past their eighth byte, by a NUL, by canonical equivalence, or not
    /// at all: random writes and removals over them leave, per key, the last write, sorted by
    /// the keys' UTF-8 bytes; SQLite then holds exactly what a dictionary of the writes holds.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func eachKeysLastWriteIsMovedInTheKeysByteOrder(seed: UInt64) throws {
        var random = SeededGenerator(state: seed)
        let names =
            [
                "a", "a\u{0}", "ab", "b", "\u{E9}", "e\u{301}", "prefix-long-key-1", "prefix-long-key-2",
                "prefix-lo",
            ]
            + (0..<300).map { "k\($0 * 7_919 % 1_000)" }
        let path = TestFiles.uniquePath("checkpoint")
        let store = try SQLiteStore(path: path)
        // By `StoreKey`, equal scalar for scalar (two `String`s canonically equivalent are one).
        var model: [StoreKey: PropertyListValue?] = [:]
        for step in 0..<3_000 {
            let name = names[Int(random.next() % UInt64(names.count))]
            let value: PropertyListValue? = random.next() % 5 == 0 ? nil : .integer(Int64(step))
            try store.setValue(value, forKey: name)
            model[StoreKey(name)] = .some(value)
        }
        let journal = try #require(store.core.journal)
        var scan = RecordScan(
            journal: journal, from: Journal.Layout.headerSize, to: journal.writeOffset, after: 0)
        var latest = LatestWrites(journal: journal, expected: 4)  // grows on the way
        while scan.nextInPlace(keyBytes: { sequence, key, value in
            latest.note(key: key, value: value, sequence: sequence)
        })
            != nil
        {}
        #expect(scan.failure == nil)
        let writes = latest.inKeyOrder()
        func name(_ write: LatestWrites.Write) -> StoreKey {
            StoreKey(
                String(
                    decoding: journal.bytesInPlace(at: write.key.offset, count: write.key.count),
                    as: UTF8.self))
        }
        #expect(
            writes.map(name)
                == model.keys.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        )
        for write in writes {
            let stored = try write.value.map {
                try PropertyListValue(
                    storedEncodingBytes: journal.bytesInPlace(at: $0.offset, count: $0.count))
            }
            #expect(stored == model[name(write)], "\(name(write))")
        }
        try store.flush()
        let reopened = try SQLiteStore(path: path)
        #expect(
            reopened.snapshot()
                == Dictionary(
                    uniqueKeysWithValues: model.compactMap { name, value in
                        value.map { (name, $0) }
                    }))
    }
}
