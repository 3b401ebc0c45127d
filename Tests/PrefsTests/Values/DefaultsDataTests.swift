import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

private struct Unicorn: Codable, PreferenceValue, Equatable {
    var isUnicorn: Bool
    var name: String
}

private enum Period: String, Codable, PreferenceValue {
    case thirtyMinutes = "30 Minutes"
    case hour = "1 Hour"
}

/// Issue "Everything a Defaults user reaches for", item 5: values stored the way Defaults
/// (sindresorhus/Defaults) stores them — `Codable` values, `Codable` enums and URLs as JSON text in
/// a string — read back through the same typed keys, with no migration step.
@Suite struct DefaultsDataTests {
    /// What Defaults' `Codable` bridge stores: `JSONEncoder` output as a string.
    private func asDefaultsStoresIt<Value: Encodable>(_ value: Value) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    @Test func theJSONTextIsExactlyWhatDefaultsWrites() throws {
        #expect(try asDefaultsStoresIt(Unicorn(isUnicorn: false, name: "x")).hasPrefix("{"))
        #expect(try asDefaultsStoresIt(Period.thirtyMinutes) == #""30 Minutes""#)
        #expect(try asDefaultsStoresIt(URL(string: "https://example.com")!) == #""https:\/\/example.com""#)
    }

    @Test(arguments: StoreKind.allCases)
    func valuesDefaultsStoredReadThroughTypedKeys(store kind: StoreKind) throws {
        let store = kind.makeStore()
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(store)
        let unicorn = Unicorn(isUnicorn: true, name: "Sparkle")
        let written: [String: String] = [
            "unicorn": try asDefaultsStoresIt(unicorn),
            "period": try asDefaultsStoresIt(Period.thirtyMinutes),
            "homepage": try asDefaultsStoresIt(URL(string: "https://example.com/a?b=c")!),
        ]
        for (key, text) in written {
            if let defaults = (store as? UserDefaultsStore)?.defaults {
                defaults.set(text, forKey: key)  // as Defaults writes: a plain string in the domain
            } else {
                try store.setValue(.string(text), forKey: key)
            }
        }
        let unicornKey = Preferences.Key<Unicorn>("unicorn", default: Unicorn(isUnicorn: false, name: ""))
        let periodKey = Preferences.Key<Period>("period", default: .hour)
        let homepageKey = Preferences.Key<URL?>("homepage")
        #expect(prefs[unicornKey] == unicorn)
        #expect(prefs[periodKey] == .thirtyMinutes)
        #expect(prefs[homepageKey] == URL(string: "https://example.com/a?b=c"))
        // No fallback to a default; the struct read from JSON text is reported (issue 49, item 5),
        // the enum and the URL, whose own form is a string, are not.
        let notices = recorder.issues.map { ($0.key, "\($0)") }
        #expect(notices.map(\.0) == ["unicorn"], "\(notices)")
        #expect(notices.allSatisfy { $0.1.contains("from JSON text") }, "\(notices)")

        // Writing stores Prefs' own form, which reads back the same.
        prefs[periodKey] = .hour
        #expect(store.value(forKey: "period") == .string("1 Hour"))
        prefs[unicornKey] = unicorn
        #expect(
            store.value(forKey: "unicorn")
                == .dictionary(["isUnicorn": .bool(true), "name": .string("Sparkle")]))
        #expect(prefs[unicornKey] == unicorn)
    }

    @Test func aStringThatIsNotJSONForTheTypeStillFallsBack() {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore())
        try? prefs.store.setValue(.string(#"{"neither": 1}"#), forKey: "unicorn")
        try? prefs.store.setValue(.string(#""45 Minutes""#), forKey: "period")
        let unicornKey = Preferences.Key<Unicorn>("unicorn", default: Unicorn(isUnicorn: false, name: "d"))
        #expect(prefs[unicornKey] == Unicorn(isUnicorn: false, name: "d"))
        #expect(prefs[Preferences.Key<Period>("period", default: .hour)] == .hour)
        #expect(recorder.issues.count == 2, "each fallback is reported")
    }
}
