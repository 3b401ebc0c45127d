import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Two spellings Swift's `String ==` takes for one: `é` as one scalar and as `e` + U+0301.
let composed = "caf\u{E9}"
let decomposed = "cafe\u{301}"

private final class Accents: PreferenceGroup {
    @Preference("caf\u{E9}") var composedProperty = 0
    @Preference("cafe\u{301}") var decomposedProperty = 0
}

/// Issue "Nothing lost, nothing hung", item 2: a key is its exact sequence of Unicode scalars.
@Suite struct ExactKeyTests {
    /// Keys order by their UTF-8 bytes, as SQLite's BINARY collation does: a prefix first, then
    /// byte by byte (so `Z` < `a` < `é`), for small and large strings alike.
    @Test func storeKeysOrderByTheirBytes() {
        let names = [
            "", "a", "ab", "b", "Z", "é", "e\u{301}", "k10", "k2", String(repeating: "x", count: 40),
            String(repeating: "x", count: 40) + "y", "中文", "🌍",
        ]
        for left in names {
            for right in names {
                #expect(
                    (StoreKey(left) < StoreKey(right))
                        == Array(left.utf8).lexicographicallyPrecedes(Array(right.utf8)),
                    "\(left) < \(right)")
            }
        }
    }

    @Test func storeKeysCompareScalars() {
        #expect(composed == decomposed, "the premise: Swift takes them for one string")
        #expect(StoreKey(composed) != StoreKey(decomposed))
        #expect(Set([StoreKey(composed), StoreKey(decomposed), StoreKey(composed)]).count == 2)
        #expect(StoreKey("K") != StoreKey("\u{212A}"), "KELVIN SIGN is canonically K")
    }

    @Test(arguments: [StoreKind.memory, .sqlite])
    func twoSpellingsAreTwoKeys(kind: StoreKind) throws {
        let store = kind.makeStore()
        try store.setValue(.integer(1), forKey: composed)
        try store.setValue(.integer(2), forKey: decomposed)
        #expect(store.value(forKey: composed) == .integer(1))
        #expect(store.value(forKey: decomposed) == .integer(2))
        #expect(store.snapshot().count == 2)
        #expect(store.allKeys().count == 2)
        try store.setValue(nil, forKey: decomposed)
        #expect(store.value(forKey: composed) == .integer(1), "deleting one leaves the other")
        #expect(store.value(forKey: decomposed) == nil)
        try store.transaction { t in
            t[decomposed] = .integer(3)
            #expect(t[composed] == .integer(1))
            #expect(t.keys.count == 2)
        }
        #expect(store.snapshot() == [StoreKey(composed): .integer(1), StoreKey(decomposed): .integer(3)])
    }

    @Test func sqliteKeepsBothAcrossConnections() async throws {
        let path = TestFiles.uniquePath()
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        try first.setValue(.integer(1), forKey: composed)
        try first.setValue(.integer(2), forKey: decomposed)
        #expect(await eventually { second.snapshot().count == 2 })
        #expect(second.value(forKey: decomposed) == .integer(2))
        #expect(try SQLiteStore(path: path).snapshot().count == 2)
    }

    /// Foundation merges the two spellings; the store refuses instead of merging silently.
    @Test func userDefaultsRefusesASecondSpelling() throws {
        let store = TestDefaults.makeStore()
        try store.setValue(.integer(1), forKey: composed)
        #expect {
            try store.setValue(.integer(2), forKey: decomposed)
        } throws: { error in
            (error as? StoreError).map {
                $0.kind == .keyConflict && $0.keys == [decomposed, composed]
            } == true
        }
        #expect(store.value(forKey: composed) == .integer(1))
        #expect(store.value(forKey: decomposed) == nil, "no exact match")
    }

    @Test(arguments: [StoreKind.memory, .sqlite])
    func observersHearOnlyTheirSpelling(kind: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(kind.makeStore())
        let one = Preferences.Key<Int>(composed, default: 0)
        let other = Preferences.Key<Int>(decomposed, default: 0)
        let heard = Locked<[Int]>([])
        let observation = prefs.observe(one, initial: false) { value in heard.withLock { $0.append(value) } }
        prefs[other] = 5
        prefs[one] = 7
        #expect(await eventually { heard.withLock { $0 } == [7] })
        prefs.store.waitForEveryDelivery()
        #expect(heard.withLock { $0 } == [7])
        #expect(prefs[other] == 5)
        observation.cancel()
    }

    @Test func aGroupKeepsBothSpellingsApart() throws {
        let settings = Accents(preferences: IssueRecorder().preferences())
        settings.composedProperty = 1
        settings.decomposedProperty = 2
        #expect(settings.composedProperty == 1)
        #expect(settings.decomposedProperty == 2)
    }

    /// Moving a value from one spelling to the other is a real move, not a no-op.
    @Test func migrationMovesBetweenSpellings() throws {
        let store = MemoryStore([StoreKey(decomposed): .integer(5)])
        let settings = Accents(preferences: IssueRecorder().preferences(store))
        let report = try settings.migrate(from: ["composedProperty": decomposed])
        #expect(report.moved == ["composedProperty"])
        #expect(settings.composedProperty == 5)
        #expect(store.value(forKey: decomposed) == nil)
    }
}
