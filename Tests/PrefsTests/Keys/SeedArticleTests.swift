import Foundation
import Prefs
import Testing

// The seed article's sample, verbatim (only the protocol declaration is Prefs' own).
extension UserDefaults {
    enum TestData: String, UserDefaultSettable {
        case name
    }
}

/// Issue "Everything a Defaults user reaches for", item 7: the article's own code works on Prefs.
@Suite(.serialized) struct SeedArticleTests {
    @Test func theArticlesSampleStoresUnderTypeNameDotCase() {
        defer { UserDefaults.TestData.name.remove() }
        UserDefaults.TestData.name.store(value: "name")
        let storeValue = UserDefaults.TestData.name.storedString
        #expect(storeValue == "name")
        #expect(UserDefaults.TestData.name.uniqueKey == "TestData.name")
        #expect(Preferences.standard.store.value(forKey: "TestData.name") == .string("name"))
        #expect(UserDefaults.TestData.name.storedValue as? String == "name")
        #expect(UserDefaults.TestData.name.storedBool == false, "a string is not a Boolean")
        UserDefaults.TestData.name.store(value: true)
        #expect(UserDefaults.TestData.name.storedBool == true)
    }
}
