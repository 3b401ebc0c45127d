import Foundation
import Observation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A model holding preferences as properties, as an app's would. (`@unchecked`: a property
/// wrapper's storage is a `var`, though `Pref` is `Sendable` and is never reassigned here.)
private final class PlayerModel: @unchecked Sendable {
    @Pref<Double> var volume: Double
    @Pref<Int> var launches: Int

    init(_ preferences: Preferences) {
        _volume = Pref(.volume, in: preferences)
        _launches = Pref(.launchCount, in: preferences)
    }
}

/// Counts the changes Observation announces for what `read` reads, re-arming after each one (as
/// SwiftUI does after each render).
private final class ChangeCounter: Sendable {
    let count = Locked(0)
    /// How many times tracking was set up (one more than `count` once it is watching again).
    let armed = Locked(0)
    private let read: @Sendable () -> Void

    init(reading read: @escaping @Sendable () -> Void) {
        self.read = read
        arm()
    }

    /// Waits until a change after the ones counted would be seen.
    func watching() async -> Bool {
        await eventually { self.armed.withLock { $0 } == self.count.withLock { $0 } + 1 }
    }

    private func arm() {
        withObservationTracking(read) { [self] in
            count.withLock { $0 += 1 }
            // onChange runs before the change is made: look again once it is.
            DispatchQueue.global().async { self.arm() }
        }
        armed.withLock { $0 += 1 }
    }
}

/// Issue "Everything a Defaults user reaches for", item 1 (the part that runs on Linux): `@Pref`
/// reads and writes a typed key and is tracked by Observation, for changes from anywhere.
@Suite struct PrefWrapperTests {
    @Test(arguments: StoreKind.allCases)
    func readsAndWritesTheKey(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let model = PlayerModel(prefs)
        #expect(model.volume == 0.5, "the key's default")
        model.volume = 0.8
        #expect(prefs[.volume] == 0.8)
        prefs[.launchCount] = 3
        #expect(model.launches == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func eachChangeFromAnyHandleIsAnnouncedOnce(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let model = PlayerModel(prefs)
        let counter = ChangeCounter { _ = model.volume }
        model.volume = 0.7  // through the property
        #expect(await eventually { counter.count.withLock { $0 } == 1 })
        #expect(await counter.watching())
        Preferences(store: prefs.store)[.volume] = 0.1  // through another handle
        #expect(await eventually { counter.count.withLock { $0 } == 2 })
        #expect(await counter.watching())
        prefs[.launchCount] = 9  // another key: not announced for `volume`
        // Every change delivered, and every announcement made where it is rendered (the main
        // queue on Apple platforms, in order): nothing more can come for that write.
        prefs.store.waitForEveryDelivery()
        await MainActor.run {}
        #expect(counter.count.withLock { $0 } == 2, "one announcement per change, none for other keys")
    }

    @Test func aChangeFromAnotherStoreOnTheSameFileIsAnnounced() async throws {
        let path = TestFiles.uniquePath("pref-wrapper")
        let prefs = Preferences(store: try SQLiteStore(path: path))
        let model = PlayerModel(prefs)
        let counter = ChangeCounter { _ = model.volume }
        // Another store object on the file: the same path as another process's writes.
        let other = Preferences(store: try SQLiteStore(path: path))
        other[.volume] = 0.3
        #expect(await eventually { counter.count.withLock { $0 } == 1 })
        #expect(model.volume == 0.3)
    }

    @Test func everyPrefOfAKeyOnAStoreSharesOneObservation() {
        let store = MemoryStore()
        let prefs = Preferences(store: store)
        let models = (0..<20).map { _ in PlayerModel(prefs) }
        #expect(models.count == 20)
        #expect(store.observerCount == 2, "one for volume, one for launches, however many models")
        withExtendedLifetime(models) {}
    }
}
