import Foundation
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Moving a `UserDefaults` domain in holds to what every write holds to: a value past a value's
/// limit is refused, and a file whose numbers are used up is reported, never a trap.
@Suite struct CopyValuesLimitsTests {
    /// `UserDefaults` takes a 9 MiB value; the store refuses it and copies nothing, not even the
    /// values beside it, and does not mark the domain as moved.
    @Test func aValuePastTheLimitIsRefusedAndNothingIsCopied() throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        defaults.set("Zhuo", forKey: "name")
        defaults.set(Data(repeating: 7, count: 9 << 20), forKey: "photo")
        #expect(defaults.synchronize())

        let error = try #require(throws: StoreError.self) {
            try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        }
        #expect(error.kind == .tooLarge)
        #expect(error.keys == ["photo"])
        #expect(store.value(forKey: "name") == nil)
        #expect(!(try store.core.hasMovedIn(marker: "moved-in:\(suite)")))

        defaults.removeObject(forKey: "photo")
        #expect(try store.copyValues(fromUserDefaultsDomain: suite, using: defaults).copied == ["name"])
    }

    /// A file whose sequence number was set to -1 (damaged or edited: read as the largest
    /// unsigned number) is reported as corrupt when a move would number past it.
    @Test func usedUpSequenceNumbersAreReportedNotATrap() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "before")
        try store.flush()
        try SQLiteConnection(path: path).execute(
            "UPDATE prefs_meta SET value = -1 WHERE name = 'checkpointed_sequence'")
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        defaults.set("Zhuo", forKey: "name")
        #expect(defaults.synchronize())

        let error = try #require(throws: StoreError.self) {
            try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        }
        #expect(error.kind == .corrupt, "\(error)")
        #expect(store.value(forKey: "before") == .integer(1), "what was stored is kept")
    }
}
