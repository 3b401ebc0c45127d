import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs

/// A daemon that must not run on bad settings fails fast at start (issue 49, item 8).
///
/// A wrong-typed value read as the default (reported once), and `p[.count] += 1` then replaced the
/// foreign `"12"` with `1`. A throwing read and a check of every declared key say what is wrong,
/// and where it comes from.
@Suite struct StrictReadTests {
    static let count = Preferences.Key<Int>("count", default: 0)
    static let level = Preferences.Key<Int>("level", default: 1, help: "Level", allowed: .range(1...10))
    static let name = Preferences.Key<String>("name", default: "")

    @Test(arguments: StoreKind.allCases)
    func aThrowingReadSaysWhatIsWrongAndWhere(kind: StoreKind) throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(kind.makeStore())
        #expect(try prefs.value(for: Self.count) == 0, "nothing stored: the default")
        try prefs.store.setValue(.string("twelve"), forKey: "count")
        #expect {
            try prefs.value(for: Self.count)
        } throws: { error in
            guard let error = error as? PreferenceError, error.kind == .typeMismatch else { return false }
            return error.key == "count" && error.message.hasSuffix("(stored)")
                && error.description.contains("twelve")
                && error.description.hasPrefix("reading \"count\"")  // not "cannot store"
        }
        try prefs.store.setValue(.integer(42), forKey: "level")
        #expect(throws: PreferenceError.self) { try prefs.value(for: Self.level) }
        try prefs.set(7, for: Self.level)
        #expect(try prefs.value(for: Self.level) == 7)
        #expect(issues.issues.isEmpty, "a strict read reports nothing: it throws")
    }

    @Test func validateNamesEachBadKeyAndItsSource() throws {
        let prefs = Preferences(
            store: MemoryStore(["count": .string("twelve"), "level": .integer(42), "name": .string("ok")]))
        var caught: PreferenceError?
        do {
            try prefs.validate(Self.count, Self.level, Self.name)
        } catch let error as PreferenceError where error.kind == .invalidSettings {
            caught = error
        }
        let error = try #require(caught)
        #expect(error.message.hasPrefix("2 of 3 keys"), "\(error)")
        #expect(error.message.contains("\"count\"") && error.message.contains("\"level\""), "\(error)")
        #expect(!error.message.contains("\"name\""), "\(error)")
        #expect(error.message.contains("(stored)"), "\(error)")
        // The store is named once, by the error (the second newcomer trial read it twice).
        #expect(error.description.components(separatedBy: "MemoryStore").count == 2, "\(error)")
        try prefs.store.setValue(.integer(12), forKey: "count")
        try prefs.store.setValue(.integer(3), forKey: "level")
        try prefs.validate([Self.count, Self.level, Self.name])
    }

    /// An administrator's lock is where a bad value can come from too, and is named.
    @Test func aLockedValueIsNamedAsLocked() throws {
        let folder = ScratchFolder.make("strict-system")
        let file = folder.appendingPathComponent("com.example.strict.plist")
        try PropertyListSerialization.data(
            fromPropertyList: ["locked": ["count": "many"]], format: .xml, options: 0
        ).write(to: file)
        let layer = SystemLayer(domain: "com.example.strict", directories: [folder.path])
        let prefs = Preferences(store: MemoryStore(), system: layer)
        #expect {
            try prefs.value(for: Self.count)
        } throws: { error in
            (error as? PreferenceError)?.message.contains("locked by \(file.path)") == true
        }
    }
}
