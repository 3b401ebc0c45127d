// The README's "Typed keys" usage, unchanged, followed by checks that every value type
// round-trips through MemoryStore and UserDefaultsStore. Exits non-zero on the first mismatch.
import Foundation
import Prefs

enum Theme: String, PreferenceValue { case system, light, dark }

struct Profile: Codable, Equatable, PreferenceValue {
    var name: String
    static let guest = Profile(name: "guest")
}

// --- README.md, "Typed keys" ---
extension Preferences.Keys {
    static let volume = Key<Double>("volume", default: 0.5)
    static let username = Key<String?>("username")  // nil when unset
    static let theme = Key<Theme>("theme", default: .system)  // RawRepresentable
    static let recent = Key<[URL]>("recentFiles", default: [])
    static let profile = Key<Profile>("profile", default: .guest)  // Codable
}

func designUsage() {
    let prefs = Preferences.standard
    prefs[.volume] = 0.8
    prefs.reset(.volume)  // back to 0.5
    print(prefs.hasValue(for: .volume))  // false: nothing stored, the default shows through
}
// --- end of README.md ---

var failures = 0
@MainActor func check(_ condition: Bool, _ what: String) {
    if !condition {
        failures += 1
        print("FAIL: \(what)")
    }
}

@MainActor func roundTrip<Value: PreferenceValue & Equatable>(
    _ value: Value, default: Value, in prefs: Preferences, _ name: String
) {
    let key = Preferences.Key<Value>(name, default: `default`)
    prefs[key] = value
    check(prefs[key] == value, "\(name) through \(prefs.store)")
}

// An absolute path: Foundation keeps the suite in that file, not in the user's ~/.config.
let suite = (NSTemporaryDirectory() as NSString).appendingPathComponent(
    "prefs.consumer.\(ProcessInfo.processInfo.processIdentifier)")
let stores: [any PreferenceStore] = [MemoryStore(), try UserDefaultsStore(suiteName: suite)]
for store in stores {
    let prefs = Preferences(store: store)
    prefs.removeAll()
    check(prefs[.volume] == 0.5 && prefs[.username] == nil && prefs[.theme] == .system, "defaults")
    prefs[.volume] = 0.8
    check(prefs[.volume] == 0.8, "volume")
    prefs.reset(.volume)
    check(prefs[.volume] == 0.5 && !prefs.hasValue(for: .volume), "reset")
    prefs[.username] = "Zhuo"
    prefs[.theme] = .dark
    prefs[.recent] = [URL(string: "https://example.com/a")!]
    prefs[.profile] = Profile(name: "Zhuo")
    check(
        prefs[.username] == "Zhuo" && prefs[.theme] == .dark && prefs[.profile].name == "Zhuo", "typed keys")
    check(prefs[.recent].first?.absoluteString == "https://example.com/a", "URL stays https")

    roundTrip(true, default: false, in: prefs, "bool")
    roundTrip(Int.min, default: 0, in: prefs, "int")
    roundTrip(Int8(-8), default: 0, in: prefs, "int8")
    roundTrip(Int16(16), default: 0, in: prefs, "int16")
    roundTrip(Int32(-32), default: 0, in: prefs, "int32")
    roundTrip(Int64.max, default: 0, in: prefs, "int64")
    roundTrip(UInt(8), default: 0, in: prefs, "uint")
    roundTrip(UInt8.max, default: 0, in: prefs, "uint8")
    roundTrip(UInt16.max, default: 0, in: prefs, "uint16")
    roundTrip(UInt32.max, default: 0, in: prefs, "uint32")
    roundTrip(UInt64(Int64.max), default: 0, in: prefs, "uint64")
    roundTrip(Float(0.1), default: 0, in: prefs, "float")
    roundTrip(Double.pi, default: 0, in: prefs, "double")
    roundTrip("héllo 🌍", default: "", in: prefs, "string")
    roundTrip(Date(timeIntervalSince1970: 1_700_000_000), default: .distantPast, in: prefs, "date")
    roundTrip(Data([0, 1, 255]), default: Data(), in: prefs, "data")
    roundTrip(URL(string: "custom://host/p?q#f")!, default: URL(string: "about:blank")!, in: prefs, "url")
    roundTrip(UUID(), default: UUID(), in: prefs, "uuid")
    roundTrip([1, 2, 3], default: [], in: prefs, "array")
    roundTrip(["a": ["b": 1.5]], default: [:], in: prefs, "dictionary")
    roundTrip(String?.some("x"), default: nil, in: prefs, "optional")
    roundTrip(Theme.light, default: .system, in: prefs, "raw")
    roundTrip(Profile(name: "p"), default: .guest, in: prefs, "codable")
    roundTrip(UInt64.max, default: 0, in: prefs, "uint64")
    do {
        try prefs.set([1, nil], for: Preferences.Key<[Int?]>("holes", default: []))
        check(false, "a nil inside an array must throw")
    } catch {
        check("\(error)".contains("holes"), "the error names the key")
    }
    prefs.removeAll()
}
designUsage()
Preferences.standard.reset(.volume)
UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite)

if failures > 0 {
    print("\(failures) checks failed")
    exit(1)
}
print("TypedKeysConsumer: every check passed on MemoryStore and UserDefaultsStore")
