import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Waits until `condition` holds, for at most `seconds`; observers are called asynchronously.

func observerCount(_ store: any PreferenceStore) -> Int {
    switch store {
    case let store as MemoryStore: store.observerCount
    case let store as UserDefaultsStore: store.observerCount
    case let store as SQLiteStore: store.observerCount
    default: -1
    }
}

@Suite(.timeLimit(.minutes(10))) struct ObservationTests {
    @Test(arguments: StoreKind.allCases)
    func changesOfYieldsTheCurrentValueThenTheNewestValuesInOrder(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        prefs[.launchCount] = 1
        var iterator = prefs.changes(of: .launchCount).makeAsyncIterator()
        #expect(await iterator.next() == 1)

        let writer = Task {
            for value in 2...20 { prefs[.launchCount] = value }
            prefs.reset(.launchCount)
        }
        var seen: [Int] = []
        while seen.last != 0, let value = await iterator.next() { seen.append(value) }
        await writer.value
        // A consumer slower than the writer skips values (the sequence keeps only the newest),
        // but never sees them out of order, and always sees where they ended.
        #expect(seen.last == 0, "the default after reset: \(seen)")
        let numbers = seen.dropLast()
        #expect(numbers.allSatisfy { (2...20).contains($0) }, "\(seen)")
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "in order: \(seen)")
    }

    @Test(arguments: StoreKind.allCases)
    func cancellingTheConsumerRemovesTheObserver(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        #expect(observerCount(prefs.store) == 0)
        let received = Locked<[Double]>([])
        let consumer = Task {
            for await volume in prefs.changes(of: .volume) { received.withLock { $0.append(volume) } }
        }
        #expect(await eventually { received.withLock { $0 } == [0.5] }, "\(received.withLock { $0 })")
        #expect(observerCount(prefs.store) == 1)
        consumer.cancel()
        await consumer.value
        #expect(await eventually { observerCount(prefs.store) == 0 })
    }

    @Test(arguments: StoreKind.allCases)
    func closureObserversSeeEachValueUntilCancelled(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let changes = Locked<[Double]>([])
        let observation = prefs.observe(.volume) { volume in changes.withLock { $0.append(volume) } }
        prefs[.volume] = 0.75
        prefs.reset(.volume)
        #expect(await eventually { changes.withLock { $0 } == [0.5, 0.75, 0.5] })

        observation.cancel()
        #expect(observerCount(prefs.store) == 0)
        prefs[.volume] = 0.1
        prefs.store.waitForEveryDelivery()
        #expect(changes.withLock { $0.count } == 3, "nothing after cancel")
    }

    @Test func releasingTheObservationEndsIt() async {
        let store = MemoryStore()
        let prefs = IssueRecorder().preferences(store)
        do {
            let observation = prefs.observe(.volume) { _ in }
            #expect(store.observerCount == 1)
            _ = observation
        }
        #expect(store.observerCount == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func observingSeveralKeysAndAllKeys(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let some = Locked<[Set<String>]>([])
        let all = Locked<[Set<String>]>([])
        let someObservation = prefs.observeChanges(to: [.volume, .theme]) { change in
            some.withLock { $0.append(Set(change.values.keys.map(\.name))) }
        }
        let allObservation = prefs.observeAllChanges { change in
            all.withLock { $0.append(Set(change.values.keys.map(\.name))) }
        }
        prefs[.volume] = 1
        prefs[.username] = "x"
        try prefs.update { p in
            p[.theme] = .dark
            p[.launchCount] = 4
        }
        #expect(await eventually { all.withLock { $0.count } == 3 })
        #expect(all.withLock { $0 } == [["volume"], ["username"], ["theme", "launchCount"]])
        #expect(some.withLock { $0 } == [["volume"], ["theme"]])
        _ = (someObservation, allObservation)
    }

    @Test(arguments: StoreKind.allCases)
    func anUpdateIsSeenOnceAfterItIsApplied(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let seen = Locked<[StoreChange]>([])
        let observation = prefs.observeAllChanges { change in
            // The whole update is visible by the time an observer hears of it.
            #expect(prefs[.launchCount] == 3 && prefs[.username] == "u")
            seen.withLock { $0.append(change) }
        }
        try prefs.update { p in
            p[.launchCount] += 1
            p[.launchCount] += 2
            p[.username] = "u"
        }
        prefs.store.waitForEveryDelivery()
        #expect(
            seen.withLock { $0 } == [
                StoreChange(values: ["launchCount": .set(.integer(3)), "username": .set(.string("u"))])
            ])
        _ = observation
    }

    @Test(arguments: StoreKind.allCases)
    func aThrowingUpdateChangesNothing(store: StoreKind) async throws {
        struct Abort: Error {}
        let prefs = IssueRecorder().preferences(store.makeStore())
        prefs[.launchCount] = 5
        let seen = Locked(0)
        let observation = prefs.observeAllChanges { _ in seen.withLock { $0 += 1 } }
        #expect(throws: Abort.self) {
            try prefs.update { p in
                p[.launchCount] = 99
                p[.username] = "never"
                throw Abort()
            }
        }
        #expect(throws: PreferenceError.self) {
            try prefs.update { p in
                p[.launchCount] = 100
                p[Preferences.Key<[Int?]>("holes", default: [])] = [1, nil]  // cannot be stored
            }
        }
        #expect(prefs[.launchCount] == 5)
        #expect(prefs[.username] == nil)
        #expect(prefs.storedKeys == ["launchCount"])
        prefs.store.waitForEveryDelivery()
        #expect(seen.withLock { $0 } == 0)
        _ = observation
    }

    @Test(arguments: StoreKind.allCases)
    func anObserverMayWriteFromItsCallback(store: StoreKind) async {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let observation = prefs.observe(.volume, initial: false) { volume in
            prefs[.username] = "volume was \(volume)"
            try? prefs.update { p in p[.launchCount] += 1 }
        }
        prefs[.volume] = 0.9
        #expect(await eventually { prefs[.username] == "volume was 0.9" && prefs[.launchCount] == 1 })
        _ = observation
    }

    @Test(arguments: StoreKind.allCases)
    func aSlowObserverDoesNotBlockWriters(store: StoreKind) async {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let writerDone = DispatchSemaphore(value: 0)
        let observerTimedOut = Locked(false)
        let observation = prefs.observe(.launchCount, initial: false) { _ in
            // Blocks until the writer has finished all its writes: if writers waited for
            // observers, the writer could not finish and this would time out.
            if writerDone.wait(timeout: .now() + 10) == .timedOut { observerTimedOut.withLock { $0 = true } }
            writerDone.signal()
        }
        for value in 1...50 { prefs[.launchCount] = value }
        writerDone.signal()
        #expect(prefs[.launchCount] == 50)
        #expect(await eventually { observerCount(prefs.store) == 1 })
        observation.cancel()
        #expect(!observerTimedOut.withLock { $0 })
    }

    @Test func rawUserDefaultsWritesThatFoundationAnnouncesReachObservers() async throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        let prefs = IssueRecorder().preferences(UserDefaultsStore(plain, domain: suite))
        let seen = Locked<[StoreChange]>([])
        let observation = prefs.observeAllChanges { change in seen.withLock { $0.append(change) } }

        prefs[.volume] = 0.2  // through Prefs: seen once, not again as a raw write
        plain.set("raw", forKey: "username")
        plain.removeObject(forKey: "volume")
        // Apple's Foundation posts this for every write in the process; Linux's posts nothing, so
        // the test announces the raw writes itself, as the platform would.
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: plain)

        #if canImport(Darwin)
            // Apple's Foundation announced each raw write as it was made: one change each (the
            // test's own announcement then finds nothing new).
            let expected = [
                StoreChange(values: ["volume": .set(.double(0.2))]),
                StoreChange(values: ["username": .set(.string("raw"))]),
                StoreChange(values: ["volume": .removed]),
            ]
        #else
            let expected = [
                StoreChange(values: ["volume": .set(.double(0.2))]),
                StoreChange(values: ["username": .set(.string("raw")), "volume": .removed]),
            ]
        #endif
        #expect(await eventually { seen.withLock { $0.count } == expected.count })
        prefs.store.waitForEveryDelivery()
        #expect(seen.withLock { $0 } == expected)
        _ = observation
    }
}
