import Foundation
import Testing

@testable import Prefs

/// Managed settings lock keys on every Apple platform as Apple delivers them (issue 48, item 6).
///
/// `SystemLayer.managed(_:)` knew only macOS's forced keys, so on iOS, tvOS and visionOS it
/// locked nothing: there MDM delivers managed app configuration, a dictionary under
/// `com.apple.configuration.managed` in the app's defaults. Linux reads that dictionary as iOS
/// does, so these tests run the path those platforms take.
@Suite struct ManagedSettingsTests {
    static let theme = Preferences.Key<String>("theme", default: "light")
    static let volume = Preferences.Key<Double>("volume", default: 0.5)

    /// A fresh suite holding `configuration` where MDM puts it.
    private func defaults(configuration: Any) throws -> UserDefaults {
        let defaults = try #require(UserDefaults(suiteName: TestDefaults.uniqueSuiteName()))
        defaults.set(configuration, forKey: "com.apple.configuration.managed")
        return defaults
    }

    @Test func managedAppConfigurationLocksItsKeys() throws {
        let defaults = try defaults(configuration: ["theme": "dark", "retries": 3])
        let layer = SystemLayer.managed(defaults)
        let prefs = Preferences(store: MemoryStore(), system: layer)
        try prefs.store.setValue(.string("light"), forKey: "theme")  // the user's, before the lock

        #expect(prefs.isLocked(Self.theme) && !prefs.isLocked(Self.volume))
        #expect(prefs[Self.theme] == "dark")
        #expect {
            try prefs.set("blue", for: Self.theme)
        } throws: { error in
            (error as? PreferenceError)?.kind == .locked
        }
        #expect(prefs.store.value(forKey: "theme") == .string("light"), "nothing was written")
        prefs[Self.volume] = 0.9
        #expect(prefs[Self.volume] == 0.9, "a key the configuration leaves out is the user's")
        #expect(layer.lockedValues == [StoreKey("theme"): .string("dark"), StoreKey("retries"): .integer(3)])
        #expect(layer.problem == nil)
    }

    @Test func aManagedConfigurationTurnsIntoLockedValues() {
        #expect(SystemLayer.lockedValues(ofManagedConfiguration: nil).locked.isEmpty)
        #expect(SystemLayer.lockedValues(ofManagedConfiguration: nil).problem == nil)
        let configuration: [String: Any] = [
            "server": "https://example.com", "limits": ["a", "b"], "flags": ["beta": true],
        ]
        let (locked, problem) = SystemLayer.lockedValues(ofManagedConfiguration: configuration)
        #expect(problem == nil)
        #expect(
            locked == [
                StoreKey("server"): .string("https://example.com"),
                StoreKey("limits"): .array([.string("a"), .string("b")]),
                StoreKey("flags"): .dictionary(["beta": .bool(true)]),
            ])
    }

    @Test func aConfigurationThatIsNotADictionaryLocksNothingAndSaysSo() throws {
        let layer = SystemLayer.managed(try defaults(configuration: "dark"))
        #expect(layer.lockedValues.isEmpty)
        #expect(
            layer.problem
                == "com.apple.configuration.managed is not a dictionary of property-list values; nothing is locked"
        )
        let recorder = IssueRecorder()
        let prefs = Preferences(store: MemoryStore(), diagnostics: recorder.diagnostics, system: layer)
        #expect(!prefs.isLocked(Self.theme))
        #expect(
            recorder.issues.contains {
                "\($0)".contains("com.apple.configuration.managed is not a dictionary")
            })
    }
}
