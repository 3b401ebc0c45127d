import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsModel

/// A value too large for a preferences store is refused before anything is written.
///
/// With `.tooLarge` (a 600 MB string was taken: 2.4 GB of memory, a 700 MB database beside a 600 MB
/// journal). Every store of Prefs refuses a value over 8 MiB; `UserDefaultsStore` refuses its
/// domain past the platform's limit first (4 MiB).
@Suite struct ValueSizeLimitTests {
    static let tooLarge = String(repeating: "x", count: PropertyListValue.largestStoredSize)

    /// Copies of one large `Data` are refused as too large, their count saturating.
    ///
    /// They take its memory once and their encoding each time: 600 copies of 4 MiB are 4 MiB in
    /// memory and 2.4 GiB encoded, past a 32-bit `Int` (every Apple Watch), where counting them
    /// overflowed and trapped.
    @Test(arguments: StoreKind.allCases)
    func copiesOfOneLargeDataAreRefusedNotCountedPastAnInt(kind: StoreKind) throws {
        let prefs = Preferences(store: kind.makeStore(), diagnostics: PreferenceDiagnostics { _ in })
        let thumbnails = Preferences.Key<[Data]>("thumbnails", default: [])
        let shared = Data(count: 4 << 20)
        let refused = #expect(throws: StoreError.self) {
            try prefs.set(Array(repeating: shared, count: 600), for: thumbnails)
        }
        #expect(refused?.kind == .tooLarge)
        #expect(!prefs.hasValue(for: thumbnails))
        #expect(Int.max.addingSaturated(1) == .max)
        #expect(Int(Int32.max).addingSaturated(Int(Int32.max)) == 2 * Int(Int32.max))
        #expect(Int.min.addingSaturated(-1) == .min)
    }

    @Test(arguments: StoreKind.allCases)
    func aValueOverTheLimitIsRefusedAndNothingChanges(kind: StoreKind) throws {
        let store = kind.makeStore()
        let prefs = Preferences(store: store, diagnostics: PreferenceDiagnostics { _ in })
        let notes = Preferences.Key<String>("notes", default: "")
        try prefs.set("short", for: notes)
        var caught: StoreError?
        do {
            try prefs.set(Self.tooLarge, for: notes)
        } catch let error as StoreError where error.kind == .tooLarge {
            caught = error
        }
        #expect(caught?.keys == ["notes"], "\(String(describing: caught))")
        #expect(prefs[notes] == "short")

        // In a transaction, the whole transaction is refused.
        #expect(throws: StoreError.self) {
            try prefs.update { p in
                p[Preferences.Key<Int>("other", default: 0)] = 1
                p[notes] = Self.tooLarge
            }
        }
        #expect(!prefs.hasValue(for: Preferences.Key<Int>("other", default: 0)))
        #expect(prefs[notes] == "short")
    }

    /// The limit is on the stored encoding: a value just under it is taken.
    @Test(arguments: [StoreKind.memory, .sqlite])
    func aValueJustUnderTheLimitIsTaken(kind: StoreKind) throws {
        let store = kind.makeStore()
        // A string's encoding is a tag, its length (4 bytes at this size) and its UTF-8.
        let largest = String(repeating: "y", count: PropertyListValue.largestStoredSize - 5)
        #expect(PropertyListValue.string(largest).storedEncodingCount == PropertyListValue.largestStoredSize)
        try store.setValue(.string(largest), forKey: "largest")
        #expect(store.value(forKey: "largest") == .string(largest))
        #expect(throws: StoreError.self) { try store.setValue(.string(largest + "y"), forKey: "largest") }
    }

    /// A transaction of many values, each within the limit, whose record would not fit in the
    /// journal: refused whole with `.tooLarge` before it is encoded. (Past 4 GiB, the record's
    /// 32-bit length trapped as the record was sealed, and encoding it took 4 GiB of memory.)
    @Test func aTransactionLargerThanTheJournalIsRefusedBeforeItIsEncoded() throws {
        let path = TestFiles.uniquePath("huge-transaction")
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "kept")
        // One 8 MiB string shared by every value: the transaction itself takes 8 MiB of memory.
        let large = PropertyListValue.string(
            String(repeating: "z", count: PropertyListValue.largestStoredSize - 5))
        let count = Int((UInt64(4) << 30) / UInt64(PropertyListValue.largestStoredSize)) + 8
        var caught: StoreError?
        do {
            try store.transaction { t in
                t["kept"] = .integer(2)
                for index in 0..<count { t["v\(index)"] = large }
            }
        } catch let error as StoreError where error.kind == .tooLarge {
            caught = error
        }
        let error = try #require(caught, "the transaction was not refused as too large")
        #expect(error.message.contains("smaller transactions"), "\(error.message)")
        #expect(error.keys.count == count + 1)
        #expect(store.value(forKey: "kept") == .integer(1), "a refused transaction changed nothing")
        #expect(store.value(forKey: "v0") == nil)
        // A transaction that fits is still taken.
        try store.transaction { t in for index in 0..<4 { t["v\(index)"] = large } }
        #expect(store.value(forKey: "v3") == large)
    }
}
