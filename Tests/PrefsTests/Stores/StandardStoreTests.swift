import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

@Suite struct StandardStoreTests {
    #if !canImport(Darwin)
        @Test func theStandardStoreOnLinuxIsASQLiteFileUnderXDGConfigHome() throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            let output = try Helper.run(["standard-write", "greeting", "hello"], configHome: home)
            #expect(output.status == 0, "\(output.stderr)")
            let expected = home.appendingPathComponent("prefs/PrefsTestHelper.sqlite").path
            #expect(output.stdout == expected)
            #expect(try SQLiteStore(path: expected).value(forKey: "greeting") == .string("hello"))
        }

        @Test func withoutXDGConfigHomeItIsUnderHomeDotConfig() throws {
            let home = try Helper.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            let output = try ChildProcess.run(
                Helper.executable, ["standard-write", "k", "v"],
                environment: ["XDG_CONFIG_HOME": nil, "HOME": home.path])
            #expect(output.status == 0)
            #expect(output.stdout == home.path + "/.config/prefs/PrefsTestHelper.sqlite")
        }
    #endif

    @Test func anUnavailableStoreReadsDefaultsAndThrowsOnWrite() {
        struct Cause: Error {}
        let issues = IssueRecorder()
        let prefs = issues.preferences(
            UnavailableStore(reason: Cause(), description: "SQLiteStore(/nowhere)"))
        #expect(prefs[.volume] == 0.5)
        // The reason it could not open (a StoreError for a SQLite file), as the store throws it.
        #expect(throws: Cause.self) { try prefs.set(0.1, for: .volume) }
        prefs[.volume] = 0.2
        #expect(issues.issues.count == 1)
    }

    @Test func movingInCopiesAWholeDomainOnceWithTypesKept() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        plain.set("Zhuo", forKey: "name")
        plain.set(30, forKey: "age")
        plain.set(0.5, forKey: "volume")
        plain.set(true, forKey: "enabled")
        plain.set(Date(timeIntervalSince1970: 100), forKey: "joined")
        plain.set(Data([1, 2]), forKey: "blob")
        plain.set(["a", "b"], forKey: "list")
        plain.set(["k": 1], forKey: "map")
        #expect(plain.synchronize())

        let store = try SQLiteStore(path: TestFiles.uniquePath("movein"))
        try store.setValue(.string("already here"), forKey: "name")
        let report = try store.copyValues(fromUserDefaultsDomain: suite, using: plain)
        #expect(report.copied == ["age", "blob", "enabled", "joined", "list", "map", "volume"])
        #expect(report.keptExisting == ["name"])
        #expect(
            store.snapshot() == [
                "name": .string("already here"), "age": .integer(30), "volume": .double(0.5),
                "enabled": .bool(true),
                "joined": .date(Date(timeIntervalSince1970: 100)), "blob": .data(Data([1, 2])),
                "list": .array([.string("a"), .string("b")]), "map": .dictionary(["k": .integer(1)]),
            ])

        plain.set("changed later", forKey: "age")
        let again = try store.copyValues(fromUserDefaultsDomain: suite, using: plain)
        #expect(again.alreadyCopied)
        #expect(store.value(forKey: "age") == .integer(30), "a second move-in changes nothing")
        #expect(try SQLiteStore(path: store.path).value(forKey: "age") == .integer(30))
    }

    /// An App Group's store is one file for every process of the group: named after the group
    /// (or the domain given), never after the calling process, so an app and its widget, each
    /// with its own bundle identifier, open the same file.
    @Test func anAppGroupsStoreIsOneFileForEveryProcessOfTheGroup() {
        let container = "/private/var/mobile/Containers/Shared/AppGroup/ABC"
        let path = SQLiteStore.sharedPath(
            container: container, appGroup: "group.com.example.app", domain: nil)
        #expect(path == container + "/Library/Application Support/prefs/group.com.example.app.sqlite")
        #expect(!path.contains(SQLiteStore.defaultDomain))
        let named = SQLiteStore.sharedPath(
            container: container, appGroup: "group.com.example.app", domain: "a/b")
        #expect(named == container + "/Library/Application Support/prefs/a_b.sqlite")
    }
}
