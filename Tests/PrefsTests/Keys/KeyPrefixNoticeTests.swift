import Foundation
import Prefs
import Testing

/// Issue "One obvious way", item 7: a key prefix whose stored names are probably not those meant.
///
/// A group joins its `keyPrefix` as given and a namespace adds a dot. The guess that mixes them up stores values under names nobody meant; it is told to the
/// diagnostics, once, and changes no stored name (values stored so stay where they are).
@Suite struct KeyPrefixNoticeTests {
    final class PrefixedProfile: PreferenceGroup {
        @Preference var name = ""
        @Preference(.volume) var volume
    }

    final class PrefixedAccount: PreferenceGroup {
        @Preference var name = ""
    }

    enum Legacy: String, PreferenceKeyNamespace {
        case token
        static var keyPrefix: String? { "Legacy." }
    }

    enum Plain: String, PreferenceKeyNamespace {
        case token
        static var keyPrefix: String? { "plain" }
    }

    @Test func aGroupsPrefixJoinedToAWordIsToldOnceAndKept() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences()
        let settings = PrefixedProfile(preferences: prefs, keyPrefix: "app")
        settings.name = "Zhuo"
        #expect(prefs.store.value(forKey: "appname") == .string("Zhuo"), "stored where it always was")
        let told = recorder.issues
        #expect(told.count == 1, "\(told)")
        #expect(told.first?.description.contains("\"appname\"") == true, "\(told)")
        #expect(told.first?.description.contains("\"app.\"") == true, "names the fix: \(told)")
        _ = PrefixedProfile(preferences: prefs, keyPrefix: "app")
        #expect(recorder.issues.count == 1, "once per group and prefix")
    }

    @Test func aGroupsPrefixEndingInASeparatorIsNotTold() {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences()
        _ = PrefixedAccount(preferences: prefs, keyPrefix: "account.")
        _ = PrefixedAccount(preferences: prefs, keyPrefix: "account_")
        _ = PrefixedAccount(preferences: prefs)
        #expect(recorder.issues.isEmpty, "\(recorder.issues)")
    }

    @Test func aNamespacesPrefixEndingInADotIsToldOnceAndKept() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences()
        Legacy.token.store("t", in: prefs)
        #expect(prefs.store.value(forKey: "Legacy..token") == .string("t"), "stored where it always was")
        #expect(Legacy.token.value(as: String.self, in: prefs) == "t")
        let told = recorder.issues
        #expect(told.count == 1, "\(told)")
        #expect(told.first?.description.contains("\"Legacy\"") == true, "names the fix: \(told)")

        Plain.token.store("p", in: prefs)
        #expect(prefs.store.value(forKey: "plain.token") == .string("p"))
        #expect(recorder.issues.count == 1, "a prefix without the dot is as meant")
    }
}
