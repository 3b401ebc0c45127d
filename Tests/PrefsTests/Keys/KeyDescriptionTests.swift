import Foundation
import PrefsSupport
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
        "volume", default: 0.5, help: "Playback volume", allowed: .range(0...1))

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
        #expect(description.allowedValues == .range(.double(0), .double(1)))
        #expect(description.allowed == "0...1")
        // An enum's cases are its allowed values; an optional key has no default.
        let quality = Preferences.Key<Quality>("quality", default: .low).keyDescription
        #expect(quality.type == "-string")
        #expect(quality.allowedValues == .values([.string("low"), .string("high")]))
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

    /// Issue 48, item 7: descriptions live in the suite itself, under reserved keys, so another
    /// handle on the suite (another process of an App Group) reads them; a companion suite beside
    /// it (`group.x.prefs-keys`) is no App Group, and the group's other members never saw it.
    @Test func userDefaultsDescriptionsAreSharedThroughTheSuiteAndHidden() throws {
        let store = TestDefaults.makeStore()
        let domain = try #require(store.domain)
        let prefs = Preferences(store: store)
        prefs[KeyDescriptionTests.volume] = 0.7
        let observed = Locked<[StoreChange]>([])
        let observation = store.observe { change in observed.withLock { $0.append(change) } }
        try prefs.publish([KeyDescriptionTests.volume])
        observation.cancel()

        let other = UserDefaultsStore(try #require(UserDefaults(suiteName: domain)), domain: domain)
        #expect(
            Preferences(store: other).keyDescriptions()["volume"] == KeyDescriptionTests.volume.keyDescription
        )
        #expect(
            UserDefaults(suiteName: domain + ".prefs-keys")?.persistentDomain(
                forName: domain + ".prefs-keys")?
                .isEmpty ?? true)
        // Never among the user's keys, on either handle, nor announced as a change.
        for handle in [store, other] {
            #expect(Preferences(store: handle).storedKeys == ["volume"])
            #expect(Set(handle.snapshot().keys) == [StoreKey("volume")])
        }
        #expect(observed.withLock { $0 }.isEmpty)
        // The reserved names are refused as keys of values.
        let error = try #require(throws: StoreError.self) {
            try store.setValue(.integer(1), forKey: "prefs.keys:volume")
        }
        #expect(error.kind == .invalidKey)
        #expect(error.message.contains("reserved"))
        #expect(
            Preferences(store: other).keyDescriptions()["volume"] == KeyDescriptionTests.volume.keyDescription
        )
    }

    /// Descriptions an earlier release kept in the companion domain are read, and moved into the
    /// suite at the next publication.
    @Test func userDefaultsDescriptionsOfTheCompanionDomainAreReadAndMovedOnce() throws {
        let store = TestDefaults.makeStore()
        let domain = try #require(store.domain)
        let companionName = domain + ".prefs-keys"
        let companion = try #require(UserDefaults(suiteName: companionName))
        let old = KeyDescriptionTests.volume.keyDescription
        companion.setPersistentDomain(["volume": old.storedForm.foundationObject], forName: companionName)
        #expect(companion.synchronize())
        #expect(Preferences(store: store).keyDescriptions()["volume"] == old)

        let name = Preferences.Key<String>("name", default: "", help: "Shown name")
        try Preferences(store: store).publish([name])
        #expect((companion.persistentDomain(forName: companionName) ?? [:]).isEmpty)
        let other = UserDefaultsStore(try #require(UserDefaults(suiteName: domain)), domain: domain)
        #expect(Set(Preferences(store: other).keyDescriptions().keys) == ["volume", "name"])
        #expect(Preferences(store: other).storedKeys.isEmpty)
    }
}
