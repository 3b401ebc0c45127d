import Foundation
import Observation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

final class Settings: PreferenceGroup {
    @Preference var name = ""
    @Preference var age = 0
    @Preference("launch_count") var launches = 0
    @Preference var nickname: String?
    @Preference var theme = Theme.system
    @Preference var recent: [URL] = []
    @Preference var profile = Profile.guest
    @Preference var lastSeen = Date(timeIntervalSince1970: 0)
}

/// Typed keys inside a group (issue "Everything a Defaults user reaches for", item 1).
final class AudioSettings: PreferenceGroup {
    @Preference(.volume) var volume
    @Preference(.launchCount) var launches
    @Preference var label = "speaker"
}

/// A group with a `@Pref` property (the general wrapper, not the group's own): it is a member.
final class MixedSettings: PreferenceGroup {
    @Preference var label = "speaker"
    @Pref(.volume, in: MixedSettings.elsewhere) var volume
    nonisolated(unsafe) static var elsewhere = Preferences(store: MemoryStore())
}

final class Clashing: PreferenceGroup {
    @Preference var count = 0
    @Preference("count") var total = 0
}

@Suite struct PreferenceGroupTests {
    /// A `@Pref` inside a group is one of its members: the group's `reset()` resets it and its
    /// `publish()` publishes it, in the preferences it lives in, under its key's own name.
    @Test func aPrefPropertyIsAMemberOfItsGroup() throws {
        let groupPrefs = IssueRecorder().preferences()
        let own = IssueRecorder().preferences()
        MixedSettings.elsewhere = own
        let settings = MixedSettings(preferences: groupPrefs)
        settings.label = "headphones"
        settings.volume = 0.9
        #expect(own[.volume] == 0.9, "written in its own preferences")
        try settings.publish()
        #expect(own.keyDescriptions()["volume"]?.swiftType == "Double", "published where it lives")
        settings.reset()
        #expect(settings.label == "speaker")
        #expect(own[.volume] == 0.5, "reset with the group")
        #expect(!own.hasValue(for: Preferences.Keys.volume))
    }

    @Test(arguments: StoreKind.allCases)
    func propertiesAreStoredUnderTheirNames(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let settings = Settings(preferences: prefs)
        #expect(settings.name == "" && settings.age == 0 && settings.nickname == nil)
        settings.name = "Xiaobing"
        settings.age = 3
        settings.launches += 1
        settings.theme = .dark
        settings.recent = [URL(string: "https://example.com/a")!]
        settings.profile = Profile(
            name: "X", age: 1, nickname: nil, joined: Date(timeIntervalSince1970: 5), tags: [])
        settings.lastSeen = Date(timeIntervalSince1970: 1_000)

        #expect(prefs.store.value(forKey: "name") == .string("Xiaobing"))
        #expect(prefs.store.value(forKey: "age") == .integer(3))
        #expect(prefs.store.value(forKey: "launch_count") == .integer(1))
        #expect(prefs.store.value(forKey: "theme") == .string("dark"))
        #expect(settings.recent.first?.absoluteString == "https://example.com/a")
        #expect(settings.profile.name == "X")
        #expect(
            Settings(preferences: prefs).lastSeen == Date(timeIntervalSince1970: 1_000),
            "a second group sees it")
    }

    @Test func optionalsAndKeyPrefix() {
        let prefs = IssueRecorder().preferences()
        let settings = Settings(preferences: prefs, keyPrefix: "app.")
        settings.nickname = "Z"
        #expect(prefs.store.value(forKey: "app.nickname") == .string("Z"))
        settings.nickname = nil
        #expect(!prefs.storedKeys.contains("app.nickname"), "assigning nil removes the value")
        settings.launches = 2
        #expect(prefs.storedKeys == ["app.launch_count"])
        #expect(settings.propertyKeys.map(\.key).contains("app.launch_count"))
    }

    @Test func resetReturnsEveryPropertyToItsDefault() {
        let prefs = IssueRecorder().preferences()
        let settings = Settings(preferences: prefs)
        settings.name = "a"
        settings.launches = 9
        prefs[Preferences.Key<Int>("unrelated", default: 0)] = 1
        settings.reset()
        #expect(settings.name == "" && settings.launches == 0)
        #expect(prefs.storedKeys == ["unrelated"], "only the group's keys are removed")
    }

    #if os(macOS) || os(Linux)
        @Test func twoPropertiesOnOneKeyStopTheProgramNamingBoth() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                _ = Clashing(preferences: Preferences(store: MemoryStore()))
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(
                message.contains("the properties 'count' and 'total' are both stored under the key 'count'"),
                "\(message)")
        }
    #endif

    @Test func aTypedKeyIsTheSamePreferenceWhateverThePrefix() {
        let prefs = IssueRecorder().preferences()
        let settings = AudioSettings(preferences: prefs, keyPrefix: "audio.")
        #expect(settings.volume == 0.5, "the key's default")
        settings.volume = 0.9
        #expect(prefs[.volume] == 0.9, "stored under the key's own name")
        prefs[.launchCount] = 4
        #expect(settings.launches == 4)
        settings.label = "headphones"
        #expect(prefs.storedKeys == ["audio.label", "launchCount", "volume"])
        let observed = Locked(false)
        withObservationTracking {
            _ = settings.volume
        } onChange: {
            observed.withLock { $0 = true }
        }
        settings.volume = 0.1
        #expect(observed.withLock { $0 })
    }

    @Test func withObservationTrackingSeesAPropertyChange() async {
        let settings = Settings(preferences: IssueRecorder().preferences())
        let changed = Locked(false)
        withObservationTracking {
            _ = settings.name
        } onChange: {
            changed.withLock { $0 = true }
        }
        settings.age = 5
        #expect(!changed.withLock { $0 }, "another property does not fire")
        settings.name = "new"
        #expect(changed.withLock { $0 })
    }

    @Test(arguments: [StoreKind.memory, .sqlite])
    func aChangeMadeThroughAnotherHandleIsObservedToo(store: StoreKind) async {
        let backing = store.makeStore()
        let settings = Settings(preferences: IssueRecorder().preferences(backing))
        let changed = Locked(false)
        withObservationTracking {
            _ = settings.age
        } onChange: {
            changed.withLock { $0 = true }
        }
        IssueRecorder().preferences(backing)[Preferences.Key<Int>("age", default: 0)] = 41
        #expect(await eventually { changed.withLock { $0 } })
        #expect(settings.age == 41)
    }
}
