// The two classic styles from the README, checked through plain UserDefaults on the same suite.
// Exits non-zero on the first failed check.
import Foundation
import Prefs

enum Account: String, PreferenceKeyNamespace { case name, age }

final class Settings: PreferenceGroup {
    @Preference var name = ""
    @Preference var age = 0
    @Preference("launch_count") var launches = 0
}

var failures = 0
@MainActor func check(_ condition: Bool, _ what: String) {
    if !condition {
        failures += 1
        print("FAIL: \(what)")
    }
}

// An absolute path: Foundation keeps the suite in that file, not in the user's ~/.config.
let suite = (NSTemporaryDirectory() as NSString).appendingPathComponent(
    "prefs.classic.\(ProcessInfo.processInfo.processIdentifier)")
let plain = UserDefaults(suiteName: suite)!
let prefs = Preferences(store: try UserDefaultsStore(suiteName: suite))

// 1. Enum-case keys, namespaced by the type.
Account.name.store("Zhuo", in: prefs)
check(plain.string(forKey: "Account.name") == "Zhuo", "Account.name is stored under the raw key Account.name")
check(Account.name.value(as: String.self, in: prefs) == "Zhuo", "Account.name reads back")
Account.age.store(30, in: prefs)
check(plain.integer(forKey: "Account.age") == 30, "Account.age is a plain integer")

// 2. A group whose property names are the keys.
let settings = Settings(preferences: prefs)
settings.name = "Xiaobing"
settings.launches = 2
check(plain.string(forKey: "name") == "Xiaobing", "a group's property is stored under its name")
check(plain.integer(forKey: "launch_count") == 2, "an explicit key is used as given")

// 3. Migration from old raw keys: once, with a mismatched type left untouched.
plain.set("old name", forKey: "test_name")
plain.set("not a number", forKey: "test_age")
let report = try settings.migrate(from: ["name": "test_name", "age": "test_age"])
check(report.moved == ["name"] && settings.name == "old name", "a fitting old value moves")
check(plain.object(forKey: "test_name") == nil, "its old key is removed")
check(
    plain.string(forKey: "test_age") == "not a number" && settings.age == 0,
    "a mismatched value stays untouched")
plain.set("newer", forKey: "test_name")
check(try settings.migrate(from: ["name": "test_name"]).alreadyRan, "the migration runs once")
check(settings.name == "old name", "a second run changes nothing")

plain.removePersistentDomain(forName: suite)
if failures > 0 {
    print("\(failures) checks failed")
    exit(1)
}
print("ClassicStylesConsumer: every check passed")
