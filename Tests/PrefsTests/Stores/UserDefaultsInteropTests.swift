import Foundation
import Prefs
import PrefsTestSupport
import Testing

@Suite struct UserDefaultsInteropTests {
    @Test func plainUserDefaultsReadsWhatTheStoreWrote() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        let prefs = IssueRecorder().preferences(try UserDefaultsStore(suiteName: suite))
        prefs[.volume] = 0.8
        prefs[.username] = "Zhuo"
        prefs[.launchCount] = 7
        prefs[.theme] = .dark
        prefs[Preferences.Key<Bool>("enabled", default: false)] = true
        prefs[Preferences.Key<[String: Int]>("sizes", default: [:])] = ["a": 1]

        #expect(plain.double(forKey: "volume") == 0.8)
        #expect(plain.string(forKey: "username") == "Zhuo")
        #expect(plain.integer(forKey: "launchCount") == 7)
        #expect(plain.string(forKey: "theme") == "dark")
        #expect(plain.bool(forKey: "enabled"))
        #expect(plain.dictionary(forKey: "sizes") as? [String: Int] == ["a": 1])
    }

    @Test func theStoreReadsWhatPlainUserDefaultsWrote() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        plain.set(0.25, forKey: "volume")
        plain.set("Xiaobing", forKey: "username")
        plain.set(12, forKey: "launchCount")
        plain.set(true, forKey: "enabled")
        plain.set(["a", "b"], forKey: "names")
        plain.set(Date(timeIntervalSince1970: 1000), forKey: "when")

        let issues = IssueRecorder()
        let prefs = issues.preferences(try UserDefaultsStore(suiteName: suite))
        #expect(prefs[.volume] == 0.25)
        #expect(prefs[.username] == "Xiaobing")
        #expect(prefs[.launchCount] == 12)
        #expect(prefs[Preferences.Key<Bool>("enabled", default: false)])
        #expect(prefs[Preferences.Key<[String]>("names", default: [])] == ["a", "b"])
        #expect(prefs[Preferences.Key<Date?>("when")] == Date(timeIntervalSince1970: 1000))
        #expect(Set(prefs.storedKeys) == ["volume", "username", "launchCount", "enabled", "names", "when"])
        #expect(issues.issues.isEmpty)
    }

    /// Issue "Ahead of MMKV", item 6: a typed read of a standard type takes one cast from
    /// `UserDefaults`' object, and answers exactly as the general path (a `PropertyListValue`,
    /// then the key's type): the same value, the same default, the same report, for every kind
    /// of object a suite can hold; a key with a reading rule or allowed values never takes it.
    @Test func directReadsAnswerAsTheGeneralPath() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        let objects: [Any] = [
            "hello", "", "42", "YES", 42, -7, Int64.max, UInt64.max, UInt32(7), 0.5, Float(1.5), 2.0, true,
            false, NSNumber(value: 1), NSNumber(value: Int8(1)), Date(timeIntervalSince1970: 5), Data([1]),
            [1, 2], ["a": 1],
        ]
        for (index, object) in objects.enumerated() { plain.set(object, forKey: "k\(index)") }
        let reads = DirectAndGeneralReads(try UserDefaultsStore(suiteName: suite), domain: suite)
        for index in 0...objects.count {
            let name = "k\(index)"  // the last one is missing
            reads.expectSame(Preferences.Key<String>(name, default: "default"))
            reads.expectSame(Preferences.Key<Int>(name, default: -1))
            reads.expectSame(Preferences.Key<Double>(name, default: -1))
            reads.expectSame(Preferences.Key<Bool>(name, default: false))
            // Keys with a reading rule or allowed values: never the direct path.
            reads.expectSame(Preferences.Key<Bool>(name, default: false, reading: .likeUserDefaults))
            reads.expectSame(Preferences.Key<Int>(name, default: 3, allowed: .range(0...10)))
            reads.expectSame(Preferences.Key<String>(name, default: "light", allowed: ["light", "dark"]))
        }
        reads.expectSameReports(atLeast: 41)
    }

    #if os(macOS) || os(Linux)
        @Test(arguments: [
            ("string", "hello world"), ("int", "42"), ("double", "0.5"), ("bool", "true"),
            ("date", "1700000000.0"),
        ])
        func aWriteThroughTheStoreOutlivesItsProcess(type: String, value: String) throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            // A domain of this test alone, removed after (on a Mac it is the developer's own).
            let domain = ScratchDefaultsDomain("prefs.crossprocess")
            defer { domain.remove() }
            let suite = domain.name

            let write = try Helper.run(["store-write", suite, "key", type, value], configHome: home)
            #expect(write.status == 0, "\(write.stderr)")
            let read = try Helper.run(["plain-read", suite, "key", type], configHome: home)
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == value)
        }
    #endif

    #if os(macOS) || os(Linux)
        @Test func aPlainWriteInAnotherProcessReadsBackThroughTheStore() throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            // A suite of this test alone (on macOS, XDG_CONFIG_HOME does not move Foundation's files).
            let suite = TestDefaults.uniqueSuiteName()
            let write = try Helper.run(["plain-write", suite, "name", "string", "Zhuo"], configHome: home)
            #expect(write.status == 0, "\(write.stderr)")
            let read = try Helper.run(["store-read", suite, "name", "string"], configHome: home)
            #expect(read.stdout == "Zhuo")
        }
    #endif
}

/// Issue "Everything a Defaults user reaches for", item 6: code reading `UserDefaults` directly
/// sees the keys' defaults once they are registered.
@Suite struct RegisteredDefaultsTests {
    @Test func plainUserDefaultsReadersSeeRegisteredDefaults() throws {
        // Foundation's registration domain is shared by every UserDefaults object of the process:
        // names of this test's own, so no other test sees them.
        let unique = UUID().uuidString
        let volume = Preferences.Key<Double>("volume.\(unique)", default: 0.5)
        let count = Preferences.Key<Int>("count.\(unique)", default: 0)
        let theme = Preferences.Key<Theme>("theme.\(unique)", default: .system)
        let nickname = Preferences.Key<String?>("nickname.\(unique)")
        let store = TestDefaults.makeStore()
        let prefs = IssueRecorder().preferences(store)
        store.registerDefaults(of: volume, count, theme, nickname)
        let defaults = store.defaults
        #expect(defaults.double(forKey: volume.name) == 0.5)
        #expect(defaults.integer(forKey: count.name) == 0)
        #expect(defaults.object(forKey: count.name) != nil)
        #expect(defaults.string(forKey: theme.name) == Theme.system.rawValue)
        #expect(defaults.object(forKey: nickname.name) == nil, "a nil default is not registered")
        #expect(store.snapshot().isEmpty, "nothing is stored")
        prefs[volume] = 0.8
        #expect(defaults.double(forKey: volume.name) == 0.8)
        prefs.reset(volume)
        #expect(defaults.double(forKey: volume.name) == 0.5, "the registered default shows again")
        #expect(prefs[volume] == 0.5)
    }
}
