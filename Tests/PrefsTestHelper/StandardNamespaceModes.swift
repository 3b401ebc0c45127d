// standard-ok-file: these modes are the only way the tests reach the enum-case style's forms that
// read `Preferences.standard` alone; only Linux tests start them, each in a child process whose
// XDG_CONFIG_HOME is a throwaway folder (on a Mac the child's standard defaults are the user's).
import Foundation
import Prefs

// The seed article's sample, verbatim (only the protocol declaration is Prefs' own).
extension UserDefaults {
    enum TestData: String, UserDefaultSettable {
        case name
    }
}

/// Keys of every standard type, read through the forms without `in:` (`Preferences.standard`).
enum ShortcutProbe: String, PreferenceKeyNamespace {
    case text, number, real, flag, when, bytes, link, list, map
}

/// Prints one line `name: value` for the test to compare.
func report(_ name: String, _ value: Any?) {
    print("\(name): \(value.map { "\($0)" } ?? "nil")")
}

/// The `seed-article` mode: the article's sample on `Preferences.standard`, printing what it read.
func seedArticle() {
    UserDefaults.TestData.name.store(value: "name")
    let storeValue = UserDefaults.TestData.name.storedString
    report("storedString", storeValue)
    report("storedName", UserDefaults.TestData.name.storedName)
    report("standard", Preferences.standard.store.value(forKey: "TestData.name"))
    UserDefaults.TestData.name.store(value: true)
    report("bool", UserDefaults.TestData.name.value(as: Bool.self))
}

/// The `namespace-shortcuts` mode: stores through `store(_:)` and reads each type with
/// `value(as:)`, all on `Preferences.standard`.
func namespaceShortcuts() {
    ShortcutProbe.text.store("Zhuo")
    ShortcutProbe.number.store(7)
    ShortcutProbe.real.store(0.5)
    ShortcutProbe.flag.store(true)
    ShortcutProbe.when.store(Date(timeIntervalSince1970: 60))
    ShortcutProbe.bytes.store(Data([1]))
    ShortcutProbe.link.store(URL(string: "mailto:a@b.c")!)
    ShortcutProbe.list.store([1, 2])
    ShortcutProbe.map.store(["a": true])
    report("string", ShortcutProbe.text.value(as: String.self))
    report("int", ShortcutProbe.number.value(as: Int.self))
    report("double", ShortcutProbe.real.value(as: Double.self))
    report("bool", ShortcutProbe.flag.value(as: Bool.self))
    report("date", ShortcutProbe.when.value(as: Date.self)?.timeIntervalSince1970)
    report("data", ShortcutProbe.bytes.value(as: Data.self).map { Array($0) })
    report("url", ShortcutProbe.link.value(as: URL.self)?.absoluteString)
    report("array", ShortcutProbe.list.value(as: [Int].self))
    report("dictionary", ShortcutProbe.map.value(as: [String: Bool].self))
    report("int of a string", ShortcutProbe.text.value(as: Int.self))
    report("hasValue", ShortcutProbe.text.hasValue())
    ShortcutProbe.text.remove()
    report("hasValue after remove", ShortcutProbe.text.hasValue())
    report("value after remove", ShortcutProbe.text.value(as: String.self))
}
