import Foundation
import Testing

@testable import Prefs
@testable import PrefsEngine

private enum Quality: String, PreferenceValue, CaseIterable {
    case low, high
}

/// Issue "Keys the program declares are known outside it", item 1: a key says what it is for and
/// which values it accepts; writes outside them throw, stored values outside them read as the
/// default.
@Suite struct KeyDescriptionTests {
    static let volume = Preferences.Key<Double>(
        "volume", default: 0.5, help: "Playback volume", allowed: 0...1)

    @Test func aWriteOutsideTheAllowedValuesThrowsAndStoresNothing() throws {
        let prefs = Preferences(store: MemoryStore())
        try prefs.set(0.8, for: Self.volume)
        #expect {
            try prefs.set(1.5, for: Self.volume)
        } throws: { error in
            guard let error = error as? PreferenceError, error.kind == .notAllowed else { return false }
            return error.description.contains("1.5 is not one of the values the key accepts (0...1)")
        }
        #expect(prefs.store.value(forKey: "volume") == .double(0.8))
        let quality = Preferences.Key<Int>("quality", default: 720, allowed: [480, 720, 1080])
        #expect(throws: PreferenceError.self) { try prefs.set(900, for: quality) }
        #expect(throws: PreferenceError.self) { try prefs.update { p in p[quality] = 900 } }
        #expect(prefs.store.value(forKey: "quality") == nil)
    }

    @Test func aStoredValueOutsideTheAllowedValuesReadsAsTheDefaultAndIsReported() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore())
        try prefs.store.setValue(.double(7), forKey: "volume")
        #expect(prefs[Self.volume] == 0.5)
        #expect(recorder.issues.count == 1)
        #expect(
            recorder.issues.first?.description.contains("7.0 is not one of the values") == true,
            "\(recorder.issues)")
    }

    @Test func aDescriptionHasTheTypeDefaultHelpAndAllowedValues() throws {
        let description = Self.volume.keyDescription
        #expect(description.name == "volume")
        #expect(description.type == "-float")
        #expect(description.swiftType == "Double")
        #expect(description.defaultValue == .double(0.5))
        #expect(description.help == "Playback volume")
        #expect(description.allowed == .range(.double(0), .double(1)))
        // An enum's cases are its allowed values; an optional key has no default.
        let quality = Preferences.Key<Quality>("quality", default: .low).keyDescription
        #expect(quality.type == "-string")
        #expect(quality.allowed == .values([.string("low"), .string("high")]))
        let name = Preferences.Key<String?>("name").keyDescription
        #expect(name.type == "-string" && name.defaultValue == nil && name.allowed == nil)
        #expect(Preferences.Key<[String: Int]>("counts", default: [:]).keyDescription.type == "-dict")
        #expect(Preferences.Key<Date>("when", default: .distantPast).keyDescription.type == "-date")
        // The stored form reads back as the same description.
        #expect(Preferences.KeyDescription(name: "volume", stored: description.storedForm) == description)
        #expect(Preferences.KeyDescription(name: "volume", stored: .string("not a description")) == nil)
    }

    @Test func allowedValuesCompareNumbersStringsAndDates() {
        let range = Preferences.AllowedValues.range(.integer(0), .integer(10))
        #expect(range.allows(.double(2.5)) && range.allows(.integer(10)) && !range.allows(.integer(11)))
        #expect(!range.allows(.string("5")))
        #expect(Preferences.AllowedValues.values([.integer(1), .string("a")]).allows(.double(1)))
        #expect(Preferences.AllowedValues.range(.string("a"), .string("m")).allows(.string("k")))
    }
}

/// Item 2: a program publishes its keys' descriptions to the store it uses; every store keeps
/// them beside the values, never among them, and a newer description replaces an older one.
@Suite struct PublishedKeyDescriptionTests {
    final class Settings: PreferenceGroup, @unchecked Sendable {
        @Preference var nickname = ""
    }

    enum Account: String, PreferenceKeyNamespace, CaseIterable { case name, age }

    @Test(arguments: StoreKind.allCases)
    func descriptionsAreKeptBesideTheValuesAndReplaced(store: StoreKind) throws {
        let prefs = Preferences(store: store.makeStore())
        prefs[KeyDescriptionTests.volume] = 0.8
        try prefs.publish([KeyDescriptionTests.volume, Preferences.Key<String?>("name")])
        let descriptions = prefs.keyDescriptions()
        #expect(descriptions["volume"] == KeyDescriptionTests.volume.keyDescription)
        #expect(descriptions["name"]?.type == "-string")
        #expect(prefs.storedKeys == ["volume"], "descriptions are never among the values")

        // A newer program's description replaces the older one's; others stay.
        try prefs.publish([Preferences.Key<Double>("volume", default: 0.7, help: "Louder by default")])
        #expect(prefs.keyDescriptions()["volume"]?.defaultValue == .double(0.7))
        #expect(prefs.keyDescriptions()["name"] != nil)

        // A group's properties and a namespace's cases publish too.
        let settings = Settings(preferences: prefs)
        try settings.publish()
        try prefs.publish(casesOf: Account.self)
        #expect(prefs.keyDescriptions()["nickname"]?.type == "-string")
        #expect(prefs.keyDescriptions()["Account.age"] != nil)
    }

    @Test func sqliteDescriptionsSurviveReopeningAndABadOneIsLeftOut() throws {
        let path = TestFiles.uniquePath()
        try Preferences(store: SQLiteStore(path: path)).publish([KeyDescriptionTests.volume])
        let reopened = try SQLiteStore(path: path)
        #expect(
            Preferences(store: reopened).keyDescriptions()["volume"]
                == KeyDescriptionTests.volume.keyDescription)
        // Bytes that are not a description (a newer release's, or damage): the key reads as undeclared.
        try SQLiteConnection(path: path).execute(
            "INSERT INTO prefs_keys(key, description) VALUES ('bad', x'FF00')")
        #expect(Preferences(store: reopened).keyDescriptions()["bad"] == nil)
        #expect(Preferences(store: reopened).keyDescriptions()["volume"] != nil)
    }

    @Test func userDefaultsDescriptionsLiveInACompanionDomain() throws {
        let store = TestDefaults.makeStore()
        try Preferences(store: store).publish([KeyDescriptionTests.volume])
        let domain = try #require(store.domainName)
        #expect(store.defaults.persistentDomain(forName: domain)?["volume"] == nil)
        let companion = UserDefaults(suiteName: domain + ".prefs-keys")!
        #expect(companion.persistentDomain(forName: domain + ".prefs-keys")?["volume"] != nil)
    }
}
