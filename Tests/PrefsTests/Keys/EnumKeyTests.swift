import Foundation
import Prefs
import PrefsTestSupport
import Testing

enum Account: String, PreferenceKeyNamespace { case name, age, homepage }
enum Pet: String, PreferenceKeyNamespace { case name }
enum Legacy: String, PreferenceKeyNamespace {
    case token
    static var keyPrefix: String? { nil }
}
enum Branded: String, PreferenceKeyNamespace {
    case theme
    static var keyPrefix: String? { "com.example" }
}

extension Preferences.Keys {
    static let accountAge = Account.age.key(default: 18)
}

@Suite struct EnumKeyTests {
    @Test(arguments: StoreKind.allCases)
    func casesAreStoredUnderTypeNameDotCase(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        Account.name.store("Zhuo", in: prefs)
        Pet.name.store("Mimi", in: prefs)
        #expect(Account.name.storedName == "Account.name")
        #expect(prefs.store.value(forKey: "Account.name") == .string("Zhuo"))
        #expect(
            prefs.store.value(forKey: "Pet.name") == .string("Mimi"), "two enums' name cases never collide")
        #expect(Account.name.value(as: String.self, in: prefs) == "Zhuo")
        #expect(Pet.name.value(as: String.self, in: prefs) == "Mimi")
    }

    @Test func thePrefixCanBeChangedOrDropped() {
        let prefs = IssueRecorder().preferences()
        Legacy.token.store("abc", in: prefs)
        Branded.theme.store("dark", in: prefs)
        #expect(prefs.storedKeys == ["com.example.theme", "token"])
    }

    @Test func anyStorableValueAndRemoval() throws {
        let prefs = IssueRecorder().preferences()
        Account.age.store(30, in: prefs)
        Account.homepage.store(URL(string: "https://example.com/a")!, in: prefs)
        #expect(Account.age.value(as: Int.self, in: prefs) == 30)
        #expect(Account.homepage.value(as: URL.self, in: prefs)?.absoluteString == "https://example.com/a")
        #expect(Account.age.hasValue(in: prefs))
        Account.age.remove(in: prefs)
        #expect(!Account.age.hasValue(in: prefs))
        #expect(Account.age.value(as: Int.self, in: prefs) == nil)
        Account.name.store(String?.none, in: prefs)
        #expect(!Account.name.hasValue(in: prefs))
    }

    @Test func aCaseBecomesATypedKeyWithADefault() {
        let prefs = IssueRecorder().preferences()
        #expect(prefs[.accountAge] == 18)
        prefs[.accountAge] += 1
        #expect(Account.age.value(as: Int.self, in: prefs) == 19)
        #expect(prefs.store.value(forKey: "Account.age") == .integer(19))
    }

    @Test func aValueOfAnotherTypeReadsAsNilAndIsReported() {
        let issues = IssueRecorder()
        let prefs = issues.preferences()
        Account.age.store("thirty", in: prefs)
        #expect(Account.age.value(as: Int.self, in: prefs) == nil)
        #expect(issues.issues.map(\.key) == ["Account.age"])
        // The message says what the read gives: nil (not "the default", which it has none of).
        #expect(issues.issues.first?.description.hasSuffix("reading nil instead") == true)
    }

    /// The forms without `in:` read `Preferences.standard`
    /// alone, which in the test process is the user's own: they run in the test helper
    /// (`namespace-shortcuts`), on Linux only, with a throwaway `XDG_CONFIG_HOME`.
    #if os(Linux)
        @Test func theTypedShortcutsReadTheStandardPreferences() throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            let output = try Helper.run(["namespace-shortcuts"], configHome: home)
            #expect(output.status == 0, "\(output.stderr)")
            #expect(
                output.stdout.components(separatedBy: "\n") == [
                    "string: Zhuo", "int: 7", "double: 0.5", "bool: true", "date: 60.0", "data: [1]",
                    "url: mailto:a@b.c", "array: [1, 2]", "dictionary: [\"a\": true]",
                    "int of a string: nil", "hasValue: true", "hasValue after remove: false",
                    "value after remove: nil",
                ])
            let file = home.appendingPathComponent("prefs/PrefsTestHelper.sqlite").path
            #expect(try SQLiteStore(path: file).value(forKey: "ShortcutProbe.number") == .integer(7))
        }
    #endif
}
