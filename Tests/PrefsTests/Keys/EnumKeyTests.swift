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
    }

    @Test func theTypedShortcutsReadTheStandardPreferences() throws {
        enum ShortcutProbe: String, PreferenceKeyNamespace {
            case text, number, real, flag, when, bytes, link, list, map
            static var keyPrefix: String? { "PrefsTests.\(ProcessInfo.processInfo.processIdentifier)" }
        }
        defer {
            for key in [ShortcutProbe.text, .number, .real, .flag, .when, .bytes, .link, .list, .map] {
                key.remove()
            }
        }
        ShortcutProbe.text.store("Zhuo")
        ShortcutProbe.number.store(7)
        ShortcutProbe.real.store(0.5)
        ShortcutProbe.flag.store(true)
        ShortcutProbe.when.store(Date(timeIntervalSince1970: 60))
        ShortcutProbe.bytes.store(Data([1]))
        ShortcutProbe.link.store(URL(string: "mailto:a@b.c")!)
        ShortcutProbe.list.store([1, 2])
        ShortcutProbe.map.store(["a": true])
        #expect(ShortcutProbe.text.string == "Zhuo")
        #expect(ShortcutProbe.number.int == 7)
        #expect(ShortcutProbe.real.double == 0.5)
        #expect(ShortcutProbe.flag.bool == true)
        #expect(ShortcutProbe.when.date == Date(timeIntervalSince1970: 60))
        #expect(ShortcutProbe.bytes.data == Data([1]))
        #expect(ShortcutProbe.link.url?.absoluteString == "mailto:a@b.c")
        #expect(ShortcutProbe.list.array == [.integer(1), .integer(2)])
        #expect(ShortcutProbe.map.dictionary == ["a": .bool(true)])
        #expect(ShortcutProbe.text.int == nil, "a string is not an int")
    }
}
