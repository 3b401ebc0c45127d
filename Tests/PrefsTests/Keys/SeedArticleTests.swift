import Foundation
import Prefs
import PrefsTestSupport
import Testing

// The seed article's sample, verbatim (only the protocol declaration is Prefs' own).
extension UserDefaults {
    enum TestData: String, UserDefaultSettable {
        case name
    }
}

/// Issue "Everything a Defaults user reaches for", item 7: the article's own code works on Prefs.
///
/// The sample reads and writes `Preferences.standard`, which in the test process is the user's own
/// (`UserDefaults.standard` on a Mac, a file under `~/.config` on Linux): it runs in the test helper
/// (`seed-article`), on Linux only, with a throwaway `XDG_CONFIG_HOME`. Its key's name is checked
/// here, on a store of the test's own.
@Suite struct SeedArticleTests {
    #if os(Linux)
        @Test func theArticlesSampleStoresUnderTypeNameDotCase() throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            let output = try Helper.run(["seed-article"], configHome: home)
            #expect(output.status == 0, "\(output.stderr)")
            #expect(
                output.stdout.components(separatedBy: "\n") == [
                    "storedString: name", "storedName: TestData.name",
                    "standard: \(PropertyListValue.string("name"))", "bool: true",
                ])
            let file = home.appendingPathComponent("prefs/PrefsTestHelper.sqlite").path
            #expect(try SQLiteStore(path: file).value(forKey: "TestData.name") == .bool(true))
        }
    #endif

    @Test func theSamplesKeyIsTypeNameDotCase() {
        let prefs = IssueRecorder().preferences()
        #expect(UserDefaults.TestData.name.storedName == "TestData.name")
        UserDefaults.TestData.name.store("name", in: prefs)
        #expect(prefs.store.value(forKey: "TestData.name") == .string("name"))
    }
}
