import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Typed reads from a `SQLiteStore` (issue "Ahead of MMKV", item 2): a plain key of `String`,
/// `Int`, `Double` or `Bool` builds its value from the read slot's words
/// (`Preferences.typedValue(of:)`); everything else goes through a `PropertyListValue`.
@Suite struct SQLiteTypedReadTests {
    /// Every kind of stored value, read by keys of the four types (plain, and reading like
    /// `UserDefaults`, and with allowed values), answers exactly as the general path: the same
    /// value, the same default, the same report, whether the slot or the cache answers.
    @Test func typedReadsAnswerAsTheGeneralPath() throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath("typed"))
        let values: [PropertyListValue] = [
            .string("dark"), .string(""), .string(ReadSlotsTestStrings.withStorage), .string("42"),
            .string("YES"), .string(String(repeating: "y", count: 15)),
            .string("a string longer than a slot holds"),
            .integer(42), .integer(-7), .integer(.max), .integer(0), .integer(1), .unsignedInteger(.max),
            .double(0.5), .double(2), .double(-0.0), .double(.infinity), .bool(true), .bool(false),
            .date(Date(timeIntervalSinceReferenceDate: 5)), .data(Data([1])), .array([.integer(1)]),
            .dictionary(["a": .integer(1)]),
        ]
        try store.transaction { t in
            for (index, value) in values.enumerated() { t["k\(index)"] = value }
        }
        let reads = DirectAndGeneralReads(store, domain: "typed")
        for index in 0...values.count {
            let name = "k\(index)"  // the last one is missing
            // Twice each: the first read may fill the slot, the second is answered from it.
            reads.expectSame(Preferences.Key<String>(name, default: "default"), times: 2)
            reads.expectSame(Preferences.Key<Int>(name, default: -1), times: 2)
            reads.expectSame(Preferences.Key<Double>(name, default: -1), times: 2)
            reads.expectSame(Preferences.Key<Bool>(name, default: false), times: 2)
            reads.expectSame(
                Preferences.Key<Bool>(name, default: false, reading: .likeUserDefaults), times: 2)
            reads.expectSame(Preferences.Key<Int>(name, default: 3, reading: .likeUserDefaults), times: 2)
            reads.expectSame(Preferences.Key<Int>(name, default: 3, allowed: .range(0...10)), times: 2)
            reads.expectSame(
                Preferences.Key<String>(name, default: "light", allowed: ["light", "dark"]), times: 2)
        }
        #expect(reads.compared.withLock { $0 } == (values.count + 1) * 16)
        reads.expectSameReports(atLeast: 101)
    }

    /// A typed read answered from a slot is never older than a write that returned before it,
    /// in this store or in another one on the file (which moves the journal, not this cache).
    @Test func typedReadsSeeEveryEarlierWriteAtOnce() throws {
        let path = TestFiles.uniquePath("typed-fresh")
        let reader = Preferences(store: try SQLiteStore(path: path))
        let other = Preferences(store: try SQLiteStore(path: path))
        let number = Preferences.Key<Int>("number", default: -1)
        let text = Preferences.Key<String>("text", default: "")
        let ratio = Preferences.Key<Double>("ratio", default: -1)
        let flag = Preferences.Key<Bool>("flag", default: false)
        for round in 0..<300 {
            let writer = round % 3 == 0 ? reader : other
            try writer.set(round, for: number)
            try writer.set("v\(round)", for: text)
            try writer.set(Double(round) / 2, for: ratio)
            try writer.set(round % 2 == 1, for: flag)
            // Read twice: the second read comes from the slot the first one filled.
            for _ in 0..<2 {
                #expect(reader[number] == round)
                #expect(reader[text] == "v\(round)")
                #expect(reader[ratio] == Double(round) / 2)
                #expect(reader[flag] == (round % 2 == 1))
            }
            if round % 50 == 49 {
                writer.reset(number)
                #expect(reader[number] == -1, "a removed key reads as its default")
            }
        }
    }
}
