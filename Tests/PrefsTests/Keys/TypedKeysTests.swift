import Foundation
import Prefs
import PrefsTestSupport
import Testing

extension Preferences.Keys {
    static let volume = Key<Double>("volume", default: 0.5)
    static let username = Key<String?>("username")
    static let theme = Key<Theme>("theme", default: .system)
    static let recent = Key<[URL]>("recentFiles", default: [])
    static let profile = Key<Profile>("profile", default: .guest)
    static let launchCount = Key<Int>("launchCount", default: 0)
}

@Suite struct TypedKeysTests {
    @Test(arguments: StoreKind.allCases)
    func designUsage(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        #expect(prefs[.volume] == 0.5)
        prefs[.volume] = 0.8
        #expect(prefs[.volume] == 0.8)
        #expect(prefs.hasValue(for: .volume))
        prefs.reset(.volume)
        #expect(prefs[.volume] == 0.5)
        #expect(!prefs.hasValue(for: .volume))

        prefs[.theme] = .dark
        prefs[.recent] = [URL(string: "https://example.com/a")!]
        prefs[.profile] = Profile(
            name: "Zhuo", age: 3, nickname: nil, joined: Date(timeIntervalSince1970: 1), tags: [])
        #expect(prefs[.theme] == .dark)
        #expect(prefs[.recent].first?.absoluteString == "https://example.com/a")
        #expect(prefs[.profile].name == "Zhuo")
    }

    @Test(arguments: StoreKind.allCases)
    func resetSeveralAndRemoveAll(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        prefs[.volume] = 1
        prefs[.username] = "a"
        prefs[.launchCount] = 3
        #expect(prefs.storedKeys == ["launchCount", "username", "volume"])

        prefs.reset(.volume, .username)
        #expect(prefs.storedKeys == ["launchCount"])
        #expect(prefs[.username] == nil)

        prefs[.theme] = .light
        prefs.removeAll()
        #expect(prefs.storedKeys.isEmpty)
        #expect(prefs[.theme] == .system)
    }

    @Test(arguments: StoreKind.allCases)
    func dictionaryRepresentationShowsStoredValues(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        prefs[.volume] = 0.25
        prefs[.theme] = .dark
        prefs[.recent] = [URL(string: "mailto:a@b.c")!]
        #expect(
            prefs.dictionaryRepresentation() == [
                "volume": .double(0.25), "theme": .string("dark"),
                "recentFiles": .array([.string("mailto:a@b.c")]),
            ])
    }

    @Test func storedFormIsPlainPropertyList() throws {
        let prefs = IssueRecorder().preferences()
        prefs[.profile] = Profile(
            name: "Z", age: 2, nickname: nil, joined: Date(timeIntervalSince1970: 3), tags: ["t"])
        #expect(
            prefs.store.value(forKey: "profile")
                == .dictionary([
                    "name": .string("Z"), "age": .integer(2), "joined": .date(Date(timeIntervalSince1970: 3)),
                    "tags": .array([.string("t")]),
                ]))
        prefs[.theme] = .light
        #expect(prefs.store.value(forKey: "theme") == .string("light"))
    }

    #if os(macOS) || os(Linux)
        @Test func emptyKeyNameIsAProgrammingError() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = Preferences.Key<Int>("", default: 0)
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("the name must not be empty"), "\(message)")
        }
    #endif
}
