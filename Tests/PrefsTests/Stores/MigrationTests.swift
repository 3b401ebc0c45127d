import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

@Suite struct GroupMigrationTests {
    @Test(arguments: StoreKind.allCases)
    func oldValuesThatFitMoveOnceAndMismatchesStay(store: StoreKind) throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(store.makeStore())
        try prefs.store.setValue(.string("test"), forKey: "test_name")
        try prefs.store.setValue(.string("not a number"), forKey: "test_age")
        try prefs.store.setValue(.integer(12), forKey: "old_launches")
        let settings = Settings(preferences: prefs)

        let report = try settings.migrate(from: [
            "name": "test_name", "age": "test_age", "launches": "old_launches",
        ])
        #expect(report.moved == ["launches", "name"])
        #expect(report.leftInPlace == ["age"])
        #expect(settings.name == "test")
        #expect(settings.launches == 12)
        #expect(settings.age == 0)
        #expect(prefs.store.value(forKey: "test_name") == nil, "a moved value's old key is removed")
        #expect(
            prefs.store.value(forKey: "test_age") == .string("not a number"), "a mismatch is left untouched")
        #expect(issues.issues.map(\.key) == ["test_age"], "and reported")

        // Once only: a second call changes nothing, even with new old-style values around.
        try prefs.store.setValue(.string("again"), forKey: "test_name")
        let second = try settings.migrate(from: ["name": "test_name"])
        #expect(second.alreadyRan)
        #expect(settings.name == "test")
        #expect(prefs.store.value(forKey: "test_name") == .string("again"))
    }

    /// A moved value is stored in its property's own form, and one outside the values the
    /// property's key accepts stays where it was with that reason (the second newcomer trial
    /// saw an integer moved into a Double kept as an integer, and a value out of range reported
    /// as one of another type).
    @Test func aMovedValueTakesItsPropertysFormAndAnOutOfRangeOneSaysSo() throws {
        final class Player: PreferenceGroup {
            @Preference var speed = 1.0
            @Preference(Preferences.Key<Double>("level", default: 0.5, allowed: .range(0...1))) var level
        }
        let issues = IssueRecorder()
        let prefs = issues.preferences(MemoryStore(["old_speed": .integer(2), "old_level": .integer(70)]))
        let report = try Player(preferences: prefs).migrate(from: [
            "speed": "old_speed", "level": "old_level",
        ])
        #expect(report.moved == ["speed"] && report.leftInPlace == ["level"])
        #expect(prefs.store.value(forKey: "speed") == .double(2), "stored as the property's Double")
        #expect(prefs.store.value(forKey: "old_level") == .integer(70))
        let told = issues.issues.map(\.description)
        #expect(told.count == 1 && told[0].contains("0...1"), "\(told)")
    }

    @Test func anUnknownPropertyThrowsBeforeAnythingChanges() throws {
        let prefs = IssueRecorder().preferences(MemoryStore(["test_name": .string("x")]))
        let settings = Settings(preferences: prefs)
        #expect {
            try settings.migrate(from: ["name": "test_name", "shoeSize": "s"])
        } throws: { error in
            (error as? PreferenceError)?.kind == .migrationFailed && "\(error)".contains("'shoeSize'")
        }
        #expect(prefs.storedKeys == ["test_name"])
        #expect(
            try !settings.migrate(from: ["name": "test_name"]).alreadyRan, "the failed call left no marker")
    }

    @Test func theMigrationIsOneAtomicStep() throws {
        let store = FailingStore(["test_name": .string("x"), "test_age": .integer(3)])
        let settings = Settings(preferences: IssueRecorder().preferences(store))
        #expect(throws: FailingStore.DiskFull.self) {
            try settings.migrate(from: ["name": "test_name", "age": "test_age"])
        }
        #expect(store.snapshot() == ["test_name": .string("x"), "test_age": .integer(3)])
    }
}

@Suite struct VersionedMigrationTests {
    static let steps: [PreferenceMigration] = [
        .rename(version: 1, "user_name", to: "username"),
        .transform(version: 2, "volume") { old in
            guard case .integer(let percent) = old else { return old }
            return .double(Double(percent) / 100)
        },
        .remove(version: 3, "legacyFlag"),
        .custom(version: 4, "count launches") { p in p[.launchCount] += 1 },
    ]

    @Test(arguments: StoreKind.allCases)
    func stepsRunInOrderEachExactlyOnce(store: StoreKind) throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        try prefs.store.setValue(.string("Zhuo"), forKey: "user_name")
        try prefs.store.setValue(.integer(80), forKey: "volume")
        try prefs.store.setValue(.bool(true), forKey: "legacyFlag")

        #expect(try prefs.migrate(Self.steps) == 4)
        #expect(prefs[.username] == "Zhuo")
        #expect(prefs[.volume] == 0.8)
        #expect(!prefs.storedKeys.contains("legacyFlag") && !prefs.storedKeys.contains("user_name"))
        #expect(prefs[.launchCount] == 1)
        #expect(
            (1...4).allSatisfy {
                prefs.store.value(forKey: "prefs.migration:PrefsMigrationVersion step \($0)") != nil
            })

        #expect(try prefs.migrate(Self.steps) == 4)
        #expect(prefs[.launchCount] == 1, "a second run applies nothing")

        let more = Self.steps + [.custom(version: 7, "one more") { p in p[.launchCount] += 10 }]
        #expect(try prefs.migrate(more) == 7)
        #expect(prefs[.launchCount] == 11, "only the new step runs")
    }

    @Test func aFailingStepStopsKeepsEarlierStepsAndNamesItself() throws {
        struct Broken: Error {}
        let prefs = IssueRecorder().preferences(
            MemoryStore(["user_name": .string("Z"), "volume": .integer(50)]))
        let steps: [PreferenceMigration] = [
            .rename(version: 1, "user_name", to: "username"),
            .custom(version: 2, "break halfway") { p in
                p[.volume] = 0.1
                throw Broken()
            },
            .remove(version: 3, "volume"),
        ]
        #expect {
            try prefs.migrate(steps)
        } throws: { error in
            guard let error = error as? PreferenceError, error.kind == .migrationFailed else { return false }
            return error.underlying is Broken
                && "\(error)".contains("migration step 2 (break halfway) failed")
        }
        #expect(prefs[.username] == "Z", "step 1 is kept")
        #expect(
            prefs.store.value(forKey: "volume") == .integer(50),
            "nothing of step 2 is applied, step 3 never ran")
        #expect(prefs.store.value(forKey: "prefs.migration:PrefsMigrationVersion step 1") != nil)
        #expect(prefs.store.value(forKey: "prefs.migration:PrefsMigrationVersion step 2") == nil)
    }

    @Test func stepsOutOfOrderAreRefused() {
        let prefs = IssueRecorder().preferences()
        #expect {
            try prefs.migrate([.remove(version: 2, "a"), .remove(version: 2, "b")])
        } throws: { error in
            (error as? PreferenceError)?.kind == .migrationFailed
                && "\(error)".contains("step 2 comes after step 2")
        }
    }
}
