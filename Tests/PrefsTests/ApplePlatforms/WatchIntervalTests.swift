import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// `refreshInterval` is taken between a millisecond and a year.
///
/// Dispatch's timer, which every
/// Apple platform's watch uses (and Linux's, for a store with no journal), traps on a negative
/// interval or one past about 584 years, and Linux's own watch clamped where Apple's did not.
@Suite struct WatchIntervalTests {
    @Test func aNegativeIntervalIsAMillisecondAndTheWatchLooks() async {
        let looks = Locked(0)
        let watch = JournalWatch(
            journal: nil, interval: .seconds(-5), wantsWakeups: { false },
            look: {
                looks.withLock { $0 += 1 }
                return false
            })
        defer { watch.stop() }
        #expect(watch.lookInterval == .milliseconds(1))
        #expect(await eventually { looks.withLock { $0 } >= 3 })
    }

    @Test func anEndlessIntervalIsAYearAndTheStoreWorks() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path, options: .init(refreshInterval: .seconds(Int64.max)))
        #expect(store.watch.lookInterval == .seconds(365 * 86_400))
        try store.setValue(.string("kept"), forKey: "k")
        #expect(try SQLiteStore(path: path).value(forKey: "k") == .string("kept"))
    }
}
