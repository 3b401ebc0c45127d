import Foundation
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A bookmark as an app on Defaults (before version 5) or `@AppStorage` kept it: `Codable`, with
/// a date, stored by `JSONEncoder` inside one string.
private struct Bookmark: Codable, Equatable, PreferenceValue {
    var title: String
    var added: Date
}

/// Item 6: the conformance in another file than the type's (declared in Support/ArticleTextSize.swift).
extension ArticleTextSize: PreferenceValue {}

private enum RefreshInterval: Int, PreferenceValue {
    case hourly = 1
    case daily = 24
}

/// Issue "Switching a real app to Prefs loses nothing and can be rolled back": what the old code
/// stored reads back as it was, and what the port writes the old code reads.
@Suite struct SwitchingAppsTests {
    private static let bookmarks = [
        Bookmark(title: "Swift", added: Date(timeIntervalSinceReferenceDate: 700_000_000.25)),
        Bookmark(title: "Prefs", added: Date(timeIntervalSinceReferenceDate: 700_086_400.5)),
    ]

    /// The old app's write: `JSONEncoder` into one string.
    private static func json<Value: Encodable>(_ value: Value) throws -> PropertyListValue {
        .string(String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
    }

    /// The old app's read of the port's write: `JSONDecoder` from the string.
    private static func decodedByTheOldApp<Value: Decodable>(_ stored: PropertyListValue?, as _: Value.Type)
        -> Value?
    {
        guard case .string(let text)? = stored else { return nil }
        return try? JSONDecoder().decode(Value.self, from: Data(text.utf8))
    }

    // MARK: - Item 1: collections stored as one JSON string read back, with no migration

    @Test(arguments: StoreKind.allCases)
    func anAppStorageArrayStoredAsJSONTextReadsBack(store: StoreKind) throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(store.makeStore())
        try prefs.store.setValue(.string(#"["fr","ja"]"#), forKey: "languages")
        #expect(prefs[Preferences.Key<[String]>("languages", default: [])] == ["fr", "ja"])
        #expect(prefs[Preferences.Key<Set<String>>("languages", default: [])] == ["fr", "ja"])
        // Read, and reported as read from another form (issue 49, item 5): no fallback.
        #expect(recorder.issues.count == 2, "\(recorder.issues)")
        #expect(recorder.issues.allSatisfy { "\($0)".contains("from JSON text") }, "\(recorder.issues)")
    }

    @Test func aDefaultsCodableArrayStoredAsJSONTextReadsBackWithItsDates() throws {
        let prefs = Preferences(store: MemoryStore())
        try prefs.store.setValue(try Self.json(Self.bookmarks), forKey: "bookmarks")
        #expect(prefs[Preferences.Key<[Bookmark]>("bookmarks", default: [])] == Self.bookmarks)
    }

    @Test func aDictionaryStoredAsAJSONObjectReadsBack() throws {
        let prefs = Preferences(store: MemoryStore())
        try prefs.store.setValue(.string(#"{"fr":2,"ja":1}"#), forKey: "counts")
        #expect(prefs[Preferences.Key<[String: Int]>("counts", default: [:])] == ["fr": 2, "ja": 1])
        // A string that is not JSON is still not an array: the default, reported.
        let recorder = IssueRecorder()
        let strict = recorder.preferences(prefs.store)
        try strict.store.setValue(.string("[fr, ja"), forKey: "languages")
        #expect(strict[Preferences.Key<[String]>("languages", default: ["en"])] == ["en"])
        #expect(recorder.issues.count == 1)
    }

    // MARK: - Item 2: a key that keeps the old code's stored form, so a rollback reads the writes

    @Test(arguments: StoreKind.allCases)
    func aJSONTextKeyWritesWhatTheOldAppDecodes(store: StoreKind) throws {
        let prefs = Preferences(store: store.makeStore())
        let key = Preferences.Key<[Bookmark]>("bookmarks", default: [], storedAs: .jsonText)
        try prefs.set(Self.bookmarks, for: key)
        let stored = prefs.store.value(forKey: "bookmarks")
        #expect(
            Self.decodedByTheOldApp(stored, as: [Bookmark].self) == Self.bookmarks,
            "\(String(describing: stored))")
        #expect(prefs[key] == Self.bookmarks)

        // @AppStorage's `extension Array: RawRepresentable` decodes its raw value the same way.
        let languages = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
        prefs[languages] = ["fr", "ja"]
        #expect(
            Self.decodedByTheOldApp(prefs.store.value(forKey: "languages"), as: [String].self) == [
                "fr", "ja",
            ])
    }

    @Test func aJSONTextKeyReadsBothFormsAndRemovesForNil() throws {
        let prefs = Preferences(store: MemoryStore())
        let key = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
        // A value a previous version of the port wrote in the property-list form.
        try prefs.store.setValue(.array([.string("de")]), forKey: "languages")
        #expect(prefs[key] == ["de"])
        let profile = Preferences.Key<Bookmark?>("profile", storedAs: .jsonText)
        prefs[profile] = Self.bookmarks[0]
        #expect(
            Self.decodedByTheOldApp(prefs.store.value(forKey: "profile"), as: Bookmark.self)
                == Self.bookmarks[0])
        prefs[profile] = nil
        #expect(prefs.store.value(forKey: "profile") == nil)
        #expect(prefs[profile] == nil)
    }

    // MARK: - Defaults 5 and later: collections with one JSON string per element

    /// A tag as Defaults 5 keeps one in a `Set`.
    private struct Tag: Codable, Hashable, PreferenceValue { var name: String }

    /// What Defaults 5+ reads back from a collection of JSON strings: each element decoded alone
    /// (its `CodableBridge` wraps the text in brackets and decodes a one-element array).
    private static func decodedByDefaults5<Element: Decodable>(_ item: PropertyListValue, as _: Element.Type)
        -> Element?
    {
        guard case .string(let text) = item else { return nil }
        return (try? JSONDecoder().decode([Element].self, from: Data("[\(text)]".utf8)))?.first
    }

    /// An array, a set and a dictionary of `Codable` values are written as Defaults 5+ writes them
    /// (its `ArrayBridge`, `SetBridge` and `DictionaryBridge`), so the app rolled back to its
    /// Defaults release reads them, on every store.
    @Test(arguments: StoreKind.allCases)
    func perElementKeysWriteWhatDefaults5Reads(store: StoreKind) throws {
        let prefs = Preferences(store: store.makeStore())
        let bookmarks = Preferences.Key<[Bookmark]>("bookmarks", default: [], storedAs: .jsonTextPerElement)
        try prefs.set(Self.bookmarks, for: bookmarks)
        guard case .array(let items)? = prefs.store.value(forKey: "bookmarks") else {
            Issue.record("not an array: \(String(describing: prefs.store.value(forKey: "bookmarks")))")
            return
        }
        #expect(items.compactMap { Self.decodedByDefaults5($0, as: Bookmark.self) } == Self.bookmarks)
        #expect(prefs[bookmarks] == Self.bookmarks)

        let tags = Preferences.Key<Set<Tag>>("tags", default: [], storedAs: .jsonTextPerElement)
        prefs[tags] = [Tag(name: "a"), Tag(name: "b")]
        guard case .array(let tagItems)? = prefs.store.value(forKey: "tags") else {
            Issue.record("tags: not an array")
            return
        }
        #expect(Set(tagItems) == [.string(#"{"name":"a"}"#), .string(#"{"name":"b"}"#)])
        #expect(prefs[tags] == [Tag(name: "a"), Tag(name: "b")])

        let places = Preferences.Key<[String: Tag]>("places", default: [:], storedAs: .jsonTextPerElement)
        prefs[places] = ["home": Tag(name: "h")]
        #expect(prefs.store.value(forKey: "places") == .dictionary(["home": .string(#"{"name":"h"}"#)]))
        #expect(prefs[places] == ["home": Tag(name: "h")])
    }

    /// A per-element key reads all three forms: its own, one JSON text (Defaults before 5,
    /// `@AppStorage`), and the property-list form an earlier port wrote.
    @Test func perElementKeysReadEveryForm() throws {
        let prefs = Preferences(store: MemoryStore())
        let tags = Preferences.Key<[Tag]>("tags", default: [], storedAs: .jsonTextPerElement)
        try prefs.store.setValue(.array([.string(#"{"name":"x"}"#)]), forKey: "tags")
        #expect(prefs[tags] == [Tag(name: "x")])
        try prefs.store.setValue(.string(#"[{"name":"y"}]"#), forKey: "tags")
        #expect(prefs[tags] == [Tag(name: "y")])
        try prefs.store.setValue(.array([.dictionary(["name": .string("z")])]), forKey: "tags")
        #expect(prefs[tags] == [Tag(name: "z")])
        // An optional collection: per element when present (Defaults' OptionalBridge), removed when nil.
        let maybe = Preferences.Key<[Tag]?>("maybe", storedAs: .jsonTextPerElement)
        prefs[maybe] = [Tag(name: "m")]
        #expect(prefs.store.value(forKey: "maybe") == .array([.string(#"{"name":"m"}"#)]))
        #expect(prefs[maybe] == [Tag(name: "m")])
        prefs[maybe] = nil
        #expect(prefs.store.value(forKey: "maybe") == nil)
    }

    // MARK: - Item 3: reads as forgiving as UserDefaults, where a key asks for it

    /// Values as `defaults write … -string YES`, `-int 1`, `-float 2.5` leave them.
    static let looseValues: [PropertyListValue] = [
        .string("YES"), .string("yes"), .string("NO"), .string("no"), .string("true"), .string("false"),
        .string("1"), .string("0"), .string(""), .string("  42"), .string("-7"), .string("3.75"),
        .string("12abc"),
        .string("abc"), .string("t"), .string("00009"), .integer(0), .integer(1), .integer(-3), .double(2.5),
        .double(0), .bool(true), .bool(false),
    ]

    @Test(arguments: looseValues)
    func forgivingReadsGiveWhatFoundationsGettersGive(value: PropertyListValue) throws {
        let store = TestDefaults.makeStore()
        let defaults = store.defaults
        defaults.set(value.foundationObject, forKey: "k")
        let prefs = Preferences(store: store)
        #expect(
            prefs[Preferences.Key<Bool>("k", default: false, reading: .likeUserDefaults)]
                == defaults.bool(forKey: "k"))
        #expect(
            prefs[Preferences.Key<Int>("k", default: -99, reading: .likeUserDefaults)]
                == defaults.integer(forKey: "k"))
        #expect(
            prefs[Preferences.Key<Double>("k", default: -99, reading: .likeUserDefaults)]
                == defaults.double(forKey: "k"))
        #expect(
            prefs[Preferences.Key<Float>("k", default: -99, reading: .likeUserDefaults)]
                == defaults.float(forKey: "k"))
        #expect(
            prefs[Preferences.Key<String?>("k", reading: .likeUserDefaults)] == defaults.string(forKey: "k"))
    }

    @Test func forgivingReadsAreOptInAndStrictReadsReportWhatTheyRefuse() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore())
        try prefs.store.setValue(.string("YES"), forKey: "debugMenu")
        #expect(prefs[Preferences.Key<Bool>("debugMenu", default: false)] == false)
        #expect(recorder.issues.count == 1)
        #expect(prefs[Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)] == true)
        #expect(recorder.issues.count == 1, "a forgiving read reports nothing")
        // Writes store the key's own type.
        let forgiving = Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)
        prefs[forgiving] = false
        #expect(prefs.store.value(forKey: "debugMenu") == .bool(false))
    }

    @Test func forgivingURLsReadPathsAndArchivedURLs() throws {
        let prefs = Preferences(store: MemoryStore())
        let key = Preferences.Key<URL?>("folder", reading: .likeUserDefaults)
        try prefs.store.setValue(.string("/tmp/downloads"), forKey: "folder")
        #expect(prefs[key] == URL(fileURLWithPath: "/tmp/downloads"))
        try prefs.store.setValue(.string("https://example.com/feed"), forKey: "folder")
        #expect(prefs[key] == URL(string: "https://example.com/feed"))
        // How UserDefaults.set(_: URL, forKey:) stores a web URL on Apple platforms.
        let archive = try NSKeyedArchiver.archivedData(
            withRootObject: NSURL(string: "https://example.com/a")!, requiringSecureCoding: true)
        try prefs.store.setValue(.data(archive), forKey: "folder")
        #expect(prefs[key] == URL(string: "https://example.com/a"))
        // Defaults' JSON string: no conversion of UserDefaults' takes it, the type's own reading does.
        try prefs.store.setValue(.string("\"https:\\/\\/example.com\\/b\""), forKey: "folder")
        #expect(prefs[key] == URL(string: "https://example.com/b"))
    }

    /// An optional key read like `UserDefaults` still falls back, reported, when neither the
    /// conversions nor the type's own reading take the stored value: it never reads as `nil`.
    @Test func anOptionalForgivingKeyReportsAValueNothingReads() throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(MemoryStore(["count": .data(Data([1])), "name": .date(.now)]))
        #expect(prefs[Preferences.Key<Int?>("count", reading: .likeUserDefaults)] == nil)
        #expect(prefs[Preferences.Key<String?>("name", reading: .likeUserDefaults)] == nil)
        #expect(issues.issues.map(\.key) == ["count", "name"])
        #expect(issues.issues.allSatisfy { if case .readFellBackToDefault = $0.kind { true } else { false } })
    }

    // MARK: - Item 4: registered defaults are not stored values

    @Test func aRegisteredDefaultIsNeitherStoredNorWrittenBackByAMigration() throws {
        let store = TestDefaults.makeStore()
        // The registration domain is the process's: a key no other test uses.
        let name = "registered-\(UUID().uuidString)"
        store.defaults.register(defaults: [name: 0.8])
        let prefs = Preferences(store: store)
        let key = Preferences.Key<Double>(name, default: 0.5)
        #expect(prefs[key] == 0.8, "a typed read gives what UserDefaults reads")
        #expect(!prefs.hasValue(for: key))
        #expect(!prefs.storedKeys.contains(name))
        #expect(prefs.dictionaryRepresentation()[StoreKey(name)] == nil)
        #expect(try prefs.update { p in p.hasValue(for: key) } == false)

        // A transform that returns its input writes nothing the user did not have.
        try prefs.migrate([.transform(version: 1, name) { old in old }])
        #expect(!prefs.hasValue(for: key))
        #expect(store.defaults.persistentDomain(forName: try #require(store.domain))?[name] == nil)

        // Once the user sets it (even to the registered value), it is stored.
        prefs[key] = 0.8
        #expect(prefs.hasValue(for: key))
        #expect(prefs.storedKeys.contains(name))
    }

    // MARK: - Item 5: legacy run-once markers

    @Test func aStepMarkedByTheAppsOwnMarkerRunsOnceAcrossTheOldCodeAndTheNew() throws {
        let prefs = Preferences(store: MemoryStore())
        try prefs.store.setValue(.string("Zhuo"), forKey: "user_name")
        let step = PreferenceMigration.rename(version: 1, "user_name", to: "username").markedBy(
            "didMigrateToV2")
        #expect(try prefs.migrate([step]) == 1)
        #expect(prefs.store.value(forKey: "username") == .string("Zhuo"))
        #expect(prefs.store.value(forKey: "didMigrateToV2") == .bool(true))

        // A user whose old app already ran the migration (its marker set) is not migrated again.
        let migrated = Preferences(store: MemoryStore())
        try migrated.store.setValue(.bool(true), forKey: "didMigrateToV2")
        try migrated.store.setValue(.string("left as it is"), forKey: "user_name")
        #expect(try migrated.migrate([step]) == 1)
        #expect(migrated.store.value(forKey: "user_name") == .string("left as it is"))
        #expect(migrated.store.value(forKey: "username") == nil)
    }

    // MARK: - Item 6: a conformance in the app's settings file

    @Test func aTypeDeclaredSendableElsewhereBecomesAPreferenceHere() {
        let prefs = Preferences(store: MemoryStore())
        let key = Preferences.Key<ArticleTextSize>("textSize", default: .medium)
        prefs[key] = .large
        #expect(prefs[key] == .large)
        #expect(prefs.store.value(forKey: "textSize") == .integer(2))
    }

    // MARK: - Item 7: diagnostics say what happened

    @Test func aStoredValueNoCaseHasIsReportedAsUnreadableNotUnstorable() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore())
        try prefs.store.setValue(.integer(2), forKey: "refresh")
        #expect(prefs[Preferences.Key<RefreshInterval>("refresh", default: .daily)] == .daily)
        let message = try #require(recorder.issues.first).description
        #expect(
            message.contains("cannot be read as RefreshInterval: no case has the raw value 2"), "\(message)")
        #expect(!message.contains("cannot be stored"))
    }
}
