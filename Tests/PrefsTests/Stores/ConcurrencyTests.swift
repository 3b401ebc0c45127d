import Foundation
import Prefs
import PrefsTestSupport
import Testing

/// Many tasks on one store at once.
///
/// CI runs this suite again under `--sanitize=thread`.
@Suite struct ConcurrencyTests {
    @Test(arguments: StoreKind.allCases)
    func concurrentUpdatesLoseNothing(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        // Foundation rewrites its whole plist per write: fewer for UserDefaults outside CI.
        let perTask = store == .userDefaults ? stressRounds(local: 200, ci: 1_000) : 1_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<perTask {
                        try prefs.update { p in p[.launchCount] += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(prefs[.launchCount] == 8 * perTask)
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentWritersAndReadersOfDistinctKeys(store: StoreKind) async {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let perTask = store == .userDefaults ? 100 : 1_000  // Foundation rewrites its whole plist per write
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<perTask {
                        let key = Preferences.Key<Int>("t\(task).\(index)", default: -1)
                        prefs[key] = index
                        #expect(prefs[key] == index)
                        #expect(prefs.hasValue(for: key))
                    }
                }
            }
        }
        #expect(prefs.storedKeys.count == 8 * perTask)
    }
}
