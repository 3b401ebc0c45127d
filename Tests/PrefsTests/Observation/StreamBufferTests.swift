import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Nothing lost, nothing hung", item 14: an unconsumed sequence holds the newest value,
/// not every change since.
@Suite(.timeLimit(.minutes(10))) struct StreamBufferTests {
    @Test func aKeysSequenceKeepsOnlyTheNewestValue() async throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        let prefs = IssueRecorder().preferences(store)
        let text = Preferences.Key<String>("text", default: "")
        var iterator = prefs.changes(of: text).makeAsyncIterator()
        let big = String(repeating: "x", count: 10_000)
        for index in 0..<500 { prefs[text] = "\(index) \(big)" }
        store.observers.waitForDelivery()
        let first = await iterator.next()
        #expect(first?.hasPrefix("499 ") == true, "\(first?.prefix(8) ?? "nil")")
    }

    @Test func theAllKeysSequenceMergesWhatWasMissed() async throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        let prefs = IssueRecorder().preferences(store)
        var iterator = prefs.allChanges().makeAsyncIterator()
        for index in 0..<100 { try store.setValue(.integer(Int64(index)), forKey: "k\(index % 10)") }
        try store.setValue(nil, forKey: "k3")
        store.observers.waitForDelivery()
        let merged = try #require(await iterator.next())
        #expect(merged.values.count == 10)
        #expect(merged.values["k9"] == .set(.integer(99)))
        #expect(merged.values["k3"] == .removed, "the newest change of a key wins: removed")
        try store.setValue(.integer(1), forKey: "after")
        #expect(await iterator.next()?.values == ["after": .set(.integer(1))])
    }
}
