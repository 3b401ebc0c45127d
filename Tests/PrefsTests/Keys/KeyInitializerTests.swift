import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs

/// One key initializer family: `help:`, `allowed:`, `storedAs:` and `reading:` go with each
/// other and with every form of default (a value, a computed one, an optional key's `nil`).
@Suite struct KeyInitializerTests {
    struct Profile: Codable, Equatable, PreferenceValue { var name: String }

    /// An optional key with help, a stored form and a reading rule: each does its part.
    @Test func anOptionalKeyTakesEveryOption() throws {
        let endpoint = Preferences.Key<URL?>("endpoint", help: "The server", reading: .likeUserDefaults)
        #expect(endpoint.help == "The server")
        #expect(endpoint.keyDescription.help == "The server")
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore(["endpoint": .string("https://example.com/api")]))
        // Read as `url(forKey:)` would: a string holding a URL.
        #expect(prefs[endpoint] == URL(string: "https://example.com/api"))

        let profile = Preferences.Key<Profile?>("profile", help: "Who", storedAs: .jsonText)
        prefs[profile] = Profile(name: "Zhuo")
        guard case .string(let text)? = prefs.store.value(forKey: "profile") else {
            Issue.record(
                "not stored as JSON text: \(String(describing: prefs.store.value(forKey: "profile")))")
            return
        }
        #expect(text.contains("Zhuo"))
        #expect(prefs[profile] == Profile(name: "Zhuo"))
        prefs[profile] = nil
        #expect(prefs.store.value(forKey: "profile") == nil, "nil removes, in every form")
    }

    /// An optional key's allowed values: a range of the wrapped type, or a list; `nil` is
    /// always accepted (it removes the value).
    @Test func anOptionalKeyLimitsItsValues() throws {
        let prefs = IssueRecorder().preferences()
        let retries = Preferences.Key<Int?>("retries", help: "How often", allowed: .range(1...5))
        try prefs.set(3, for: retries)
        #expect(prefs[retries] == 3)
        #expect(throws: PreferenceError.self) { try prefs.set(9, for: retries) }
        #expect(prefs[retries] == 3, "a refused write changes nothing")
        try prefs.set(nil, for: retries)
        #expect(prefs[retries] == nil)

        let size = Preferences.Key<Int?>("size", allowed: [480, 720])
        try prefs.set(720, for: size)
        #expect(throws: PreferenceError.self) { try prefs.set(1, for: size) }
        try prefs.set(nil, for: size)
        #expect(!prefs.hasValue(for: size))
        #expect(retries.keyDescription.allowed != nil, "tools see the range")
    }

    /// A computed default with help, allowed values and a stored form.
    @Test func aComputedDefaultTakesEveryOption() throws {
        let prefs = IssueRecorder().preferences()
        let calls = Locked(0)
        let level = Preferences.Key<Int>(
            "level",
            default: {
                calls.withLock { $0 += 1 }
                return 2
            }, help: "The level", allowed: .range(1...3))
        #expect(prefs[level] == 2)
        #expect(calls.withLock { $0 } >= 1, "computed when nothing is stored")
        #expect(throws: PreferenceError.self) { try prefs.set(7, for: level) }
        #expect(level.help == "The level")

        let names = Preferences.Key<[String]>("names", default: { ["a"] }, storedAs: .jsonText)
        prefs[names] = ["b", "c"]
        #expect(prefs.store.value(forKey: "names") == .string(#"["b","c"]"#))
        #expect(prefs[names] == ["b", "c"])
    }

    /// A stored form and a reading rule together: writes in the form; reads the form, and what
    /// `UserDefaults` would convert.
    @Test func aStoredFormAndAReadingRuleGoTogether() throws {
        let prefs = IssueRecorder().preferences(MemoryStore(["flag": .string("YES")]))
        let flag = Preferences.Key<Bool>(
            "flag", default: false, storedAs: .jsonText, reading: .likeUserDefaults)
        #expect(prefs[flag] == true, "read as bool(forKey:) reads \"YES\"")
        prefs[flag] = false
        #expect(prefs.store.value(forKey: "flag") == .string("false"), "written as JSON text")
        #expect(prefs[flag] == false)
    }
}
