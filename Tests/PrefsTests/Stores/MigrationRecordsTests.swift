import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs

/// Issue 49, items 2 and 3: migrations record what ran, per mapping entry and per step, as the
/// library's own bookkeeping that `removeAll()` keeps and the user's views leave out.
@Suite struct MigrationRecordsTests {
    private static let count = Preferences.Key<Int>("count", default: 0)

    /// Steps adding to `count`, one per version given: version 1 adds 1, 2 adds 10, 3 adds 100.
    private static func adding(_ versions: Int...) -> [PreferenceMigration] {
        versions.map { version in
            .custom(version: version, "add \(version)") { p in
                p[count] += [1: 1, 2: 10, 3: 100][version] ?? 1000
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aLaterReleasesNewEntryRunsOnceAndEarlierEntriesNeverAgain(store: StoreKind) throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        try prefs.store.setValue(.string("Zhuo"), forKey: "test_name")
        try prefs.store.setValue(.integer(41), forKey: "old_age")
        let settings = Settings(preferences: prefs)

        // This release maps one property.
        #expect(try settings.migrate(from: ["name": "test_name"]).moved == ["name"])
        #expect(settings.age == 0 && prefs.store.value(forKey: "old_age") == .integer(41))

        // The next release adds an entry: it runs, once; the earlier one does not run again.
        try prefs.store.setValue(.string("again"), forKey: "test_name")
        let next = try settings.migrate(from: ["name": "test_name", "age": "old_age"])
        #expect(next.moved == ["age"] && !next.alreadyRan)
        #expect(settings.age == 41 && settings.name == "Zhuo")
        #expect(prefs.store.value(forKey: "old_age") == nil)
        #expect(prefs.store.value(forKey: "test_name") == .string("again"), "the first entry ran before")

        try prefs.store.setValue(.integer(7), forKey: "old_age")
        let again = try settings.migrate(from: ["name": "test_name", "age": "old_age"])
        #expect(again.alreadyRan && again.moved.isEmpty)
        #expect(settings.age == 41)

        // Numbered steps: a step a later release adds runs once, even numbered below one that ran.
        #expect(try prefs.migrate(Self.adding(1, 3)) == 3)
        #expect(prefs[Self.count] == 101)
        #expect(try prefs.migrate(Self.adding(1, 2, 3)) == 3)
        #expect(prefs[Self.count] == 111, "only step 2 ran")
        try prefs.migrate(Self.adding(1, 2, 3))
        #expect(prefs[Self.count] == 111)
    }

    @Test func aCustomStepRunsOnceAcrossRemoveAllAndARelaunch() throws {
        let path = TestFiles.uniquePath()
        let steps: [PreferenceMigration] = [
            .custom(version: 1, "add 100") { p in p[Self.count] += 100 }
        ]
        do {
            let prefs = IssueRecorder().preferences(try SQLiteStore(path: path))
            try prefs.store.setValue(.string("Zhuo"), forKey: "test_name")
            try prefs.migrate(steps)
            try Settings(preferences: prefs).migrate(from: ["name": "test_name"])
            #expect(prefs[Self.count] == 100)
            prefs.removeAll()
            #expect(prefs.storedKeys.isEmpty)
        }
        // The next launch: a new handle on the same file.
        let prefs = IssueRecorder().preferences(try SQLiteStore(path: path))
        try prefs.store.setValue(.string("written after"), forKey: "test_name")
        try prefs.migrate(steps)
        let report = try Settings(preferences: prefs).migrate(from: ["name": "test_name"])
        #expect(prefs[Self.count] == 0, "the step did not run again")
        #expect(report.alreadyRan)
        #expect(prefs.store.value(forKey: "test_name") == .string("written after"))
    }

    @Test(arguments: StoreKind.allCases)
    func theMarkersOfPrefs01AreHonoured(store: StoreKind) throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let ran = Date(timeIntervalSince1970: 1_700_000_000)
        // As Prefs 0.1 left a store: one marker per group, the version reached for the steps.
        try prefs.store.setValue(.date(ran), forKey: "PrefsMigration.Settings.")
        try prefs.store.setValue(.integer(2), forKey: "PrefsMigrationVersion")
        try prefs.store.setValue(.string("again"), forKey: "test_name")
        try prefs.store.setValue(.integer(41), forKey: "old_age")
        let settings = Settings(preferences: prefs)

        // The marker stands for the mapping of the first call that finds it.
        let first = try settings.migrate(from: ["name": "test_name"])
        #expect(first.alreadyRan && first.moved.isEmpty)
        #expect(settings.name == "" && prefs.store.value(forKey: "test_name") == .string("again"))
        let next = try settings.migrate(from: ["name": "test_name", "age": "old_age"])
        #expect(next.moved == ["age"] && settings.name == "")

        // The version stands for the steps up to it.
        #expect(try prefs.migrate(Self.adding(1, 2, 3)) == 3)
        #expect(prefs[Self.count] == 100, "steps 1 and 2 ran under 0.1; only step 3 runs")

        // Both became records: no longer among the user's keys.
        #expect(prefs.storedKeys == ["age", "count", "test_name"])
    }

    @Test(arguments: StoreKind.allCases)
    func theRecordsAreNotAmongTheUsersKeys(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let heard = Locked<[String]>([])
        let observation = prefs.observeAllChanges { change in
            heard.withLock { $0 += change.values.keys.map(\.name) }
        }
        defer { observation.cancel() }
        try prefs.store.setValue(.integer(41), forKey: "old_age")
        try Settings(preferences: prefs).migrate(from: ["age": "old_age"])
        try prefs.migrate(Self.adding(1))
        try prefs.set(1, for: .volume)

        #expect(prefs.storedKeys == ["age", "count", "volume"])
        #expect(Set(prefs.dictionaryRepresentation().keys.map(\.name)) == ["age", "count", "volume"])
        #expect(await eventually { heard.withLock { $0.contains("volume") } })
        #expect(heard.withLock { $0 }.allSatisfy { ["age", "old_age", "count", "volume"].contains($0) })
        // They are in the store, by their exact names.
        #expect(prefs.store.value(forKey: "prefs.migration:Settings.age <- old_age") != nil)
        #expect(prefs.store.value(forKey: "prefs.migration:PrefsMigrationVersion step 1") != nil)
    }
}
