import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A store that watches keys as `UserDefaultsStore` does on Apple platforms: it counts the keys
/// observations ask for with the same ``WatchedKeys`` its key-value observing is driven by.
private final class KeyWatchingStore: PrefsOwnStore {
    let backing = MemoryStore()
    let watched = Locked(WatchedKeys())
    var description: String { "KeyWatchingStore" }

    func value(forKey key: String) -> PropertyListValue? { backing.value(forKey: key) }
    func snapshot() -> [StoreKey: PropertyListValue] { backing.snapshot() }
    func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try backing.transaction(body)
    }
    func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        backing.observe(handler)
    }
    func observe(keys: [String], _ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        let observation = backing.observe(handler)
        watched.withLock { _ = $0.add(keys) }
        return StoreObservation { [watched] in
            observation.cancel()
            watched.withLock { _ = $0.remove(keys) }
        }
    }

    var watchedKeys: [String] { watched.withLock { $0.all } }
}

/// Issue "Right on Apple platforms", item 5 (the part that runs on Linux): every way to observe
/// tells the store which keys it observes, for as long as it observes them — what the Apple-only
/// key-value observing of `UserDefaultsStore` watches other processes' writes by.
@Suite(.timeLimit(.minutes(10))) struct KeyWatchTests {
    @Test func keysAreCountedFromTheFirstObserverToTheLast() {
        var keys = WatchedKeys()
        #expect(keys.add(["volume", "theme", "volume"]) == ["theme", "volume"])
        #expect(keys.add(["volume"]) == [])
        #expect(keys.remove(["volume"]) == [])
        #expect(keys.all == ["theme", "volume"])
        #expect(keys.remove(["volume", "theme"]) == ["theme", "volume"])
        #expect(keys.remove(["volume"]) == [], "removing what is not watched does nothing")
        #expect(keys.all.isEmpty)
    }

    /// Key-value observing reads `a.b` as a key path and `@count` as an operator.
    @Test func keysKeyValueObservingWouldMisreadAreNotWatched() {
        var keys = WatchedKeys()
        #expect(keys.add(["com.example.flag", "@count", "", "plain"]) == ["plain"])
        #expect(keys.remove(["com.example.flag"]) == [])
    }

    @Test func eachWayOfObservingTellsTheStoreItsKeysUntilItEnds() async throws {
        let store = KeyWatchingStore()
        let prefs = Preferences(store: store)

        var observation: StoreObservation? = prefs.observe(.volume) { _ in }
        #expect(store.watchedKeys == ["volume"])
        observation = nil
        #expect(store.watchedKeys.isEmpty)

        observation = prefs.observeChanges(to: [.volume, .launchCount]) { _ in }
        #expect(store.watchedKeys == ["launchCount", "volume"])
        observation?.cancel()
        #expect(store.watchedKeys.isEmpty)

        observation = prefs.observe(.volume, .launchCount) { _, _ in }
        #expect(store.watchedKeys == ["launchCount", "volume"], "the typed two-key form")
        observation = nil
        #expect(store.watchedKeys.isEmpty)
        withExtendedLifetime(observation) {}

        let settings = AudioSettings(preferences: prefs)
        #expect(store.watchedKeys == ["label", "launchCount", "volume"])
        withExtendedLifetime(settings) {}

        let pref = Pref(.theme, in: prefs)
        #expect(store.watchedKeys.contains("theme"))
        withExtendedLifetime(pref) {}
    }

    @Test func aStreamOfChangesWatchesItsKeyWhileItIsConsumed() async throws {
        let store = KeyWatchingStore()
        let prefs = Preferences(store: store)
        let consumer = Task {
            for await value in prefs.changes(of: .volume) where value == 0.9 { return true }
            return false
        }
        #expect(await eventually { store.watchedKeys == ["volume"] })
        prefs[.volume] = 0.9
        #expect(await consumer.value)
        #expect(await eventually { store.watchedKeys.isEmpty }, "the stream ended with its consumer")
    }
}
