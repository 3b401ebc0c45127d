import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

extension Preferences.Keys {
    fileprivate static let muted = Key<Bool>("muted", default: false)
    fileprivate static let firstLaunch = Key<Date>("firstLaunch", default: { Date() })
}

/// Issue "Everything a Defaults user reaches for", items 3 and 4: `.initial`, typed observation
/// of several keys, `isDefaultValue`, keys equal by name, defaults computed when read.
@Suite(.timeLimit(.minutes(10))) struct ObservationOptionsTests {
    /// One rule: the current value first (unless `initial: false`), then every change; a handler
    /// gets exactly what the stream of the same key yields.
    @Test(arguments: StoreKind.allCases)
    func initialCallsTheHandlerAtOnceWithTheCurrentValue(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        prefs[.volume] = 0.25
        let seen = Locked<[Double]>([])
        let observation = prefs.observe(.volume) { volume in seen.withLock { $0.append(volume) } }
        #expect(seen.withLock { $0 } == [0.25], "called before observe returns")
        var stream = prefs.changes(of: .volume).makeAsyncIterator()
        #expect(await stream.next() == 0.25, "the stream starts with the current value too")
        prefs[.volume] = 0.75
        #expect(await eventually { seen.withLock { $0 } == [0.25, 0.75] })
        #expect(await stream.next() == 0.75)
        // Writing the same value again is a change for both.
        prefs[.volume] = 0.75
        #expect(await eventually { seen.withLock { $0 } == [0.25, 0.75, 0.75] })
        #expect(await stream.next() == 0.75)
        observation.cancel()

        let plain = Locked<[Double]>([])
        let withoutInitial = prefs.observe(.volume, initial: false) { volume in
            plain.withLock { $0.append(volume) }
        }
        var later = prefs.changes(of: .volume, initial: false).makeAsyncIterator()
        prefs[.volume] = 1
        #expect(
            await eventually { plain.withLock { $0 } == [1] },
            "with initial: false the first call is a change")
        #expect(await later.next() == 1)
        withoutInitial.cancel()
    }

    /// Several keys' handler gets each change's values, in order, never what is stored by the
    /// time it runs (three quick writes arrived as three calls with the last values).
    @Test(arguments: StoreKind.allCases)
    func severalKeysGetEachChangesValues(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let seen = Locked<[String]>([])
        let observation = prefs.observe(.launchCount, .username) { count, name in
            seen.withLock { $0.append("\(count) \(name ?? "nil")") }
        }
        prefs[.launchCount] = 1
        prefs[.username] = "y"
        prefs[.launchCount] = 2
        let expected = ["0 nil", "1 nil", "1 y", "2 y"]
        #expect(await eventually { seen.withLock { $0 } == expected }, "\(seen.withLock { $0 })")
        prefs.store.waitForEveryDelivery()
        #expect(seen.withLock { $0 } == expected, "nothing delivered twice")
        // The stream yields the same states, newest when its consumer falls behind; never one twice.
        var stream = prefs.changes(of: .launchCount, .username).makeAsyncIterator()
        let now = await stream.next()
        #expect(now?.0 == 2 && now?.1 == "y")
        prefs[.launchCount] = 3
        let next = await stream.next()
        #expect(next?.0 == 3 && next?.1 == "y")
        observation.cancel()
    }

    @Test(arguments: StoreKind.allCases)
    func severalKeysArriveTypedAndTogether(store: StoreKind) async throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        var iterator = prefs.changes(of: .volume, .muted).makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.0 == 0.5 && first?.1 == false)
        try prefs.update { p in
            p[.volume] = 0.1
            p[.muted] = true
        }
        let second = await iterator.next()
        #expect(second?.0 == 0.1 && second?.1 == true, "one update, one value with both keys")
        prefs[.launchCount] = 3  // another key: nothing arrives for it
        prefs[.muted] = false
        let third = await iterator.next()
        #expect(third?.0 == 0.1 && third?.1 == false)

        // Any number of keys, each typed (four was the limit before parameter packs).
        let five = Preferences.Key<String>("five", default: "v")
        var all = prefs.changes(of: .volume, .muted, .launchCount, .firstLaunch, five).makeAsyncIterator()
        let now = await all.next()
        #expect(now?.0 == 0.1 && now?.1 == false && now?.2 == 3 && now?.4 == "v")
        prefs[five] = "w"
        let changed = await all.next()
        #expect(changed?.2 == 3 && changed?.4 == "w")

        let heard = Locked<[String]>([])
        let observation = prefs.observe(.volume, .muted, .launchCount) { volume, muted, count in
            heard.withLock { $0.append("\(volume) \(muted) \(count)") }
        }
        #expect(heard.withLock { $0 } == ["0.1 false 3"])
        prefs[.launchCount] = 4
        #expect(await eventually { heard.withLock { $0 } == ["0.1 false 3", "0.1 false 4"] })
        observation.cancel()
    }

    @Test(arguments: StoreKind.allCases)
    func isDefaultValueComparesWithTheDefault(store: StoreKind) {
        let prefs = IssueRecorder().preferences(store.makeStore())
        #expect(prefs.isDefaultValue(.volume))
        prefs[.volume] = 0.9
        #expect(!prefs.isDefaultValue(.volume))
        prefs[.volume] = 0.5
        #expect(prefs.isDefaultValue(.volume), "stored, but equal to the default")
        prefs.reset(.volume)
        #expect(prefs.isDefaultValue(.volume))
    }

    @Test func keysAreEqualAndHashedByTheirExactName() {
        let volume: Preferences.Keys = .volume
        #expect(volume == Preferences.Key<Double>("volume", default: 0))
        #expect(volume == Preferences.Key<String>("volume", default: ""), "the name decides, not the type")
        #expect(volume != Preferences.Keys.theme)
        #expect(
            Preferences.Key<Int>("caf\u{E9}", default: 0) != Preferences.Key<Int>("cafe\u{301}", default: 0),
            "canonically equivalent names are two keys, as in every store")
        let keys: Set<Preferences.Keys> = [.volume, .theme, Preferences.Key<Double>("volume", default: 1)]
        #expect(keys.count == 2)
    }

    @Test func aComputedDefaultIsComputedWhenRead() {
        let prefs = IssueRecorder().preferences(MemoryStore())
        let calls = Locked(0)
        let key = Preferences.Key<Int>(
            "counted",
            default: {
                calls.withLock {
                    $0 += 1
                    return $0
                }
            })
        #expect(prefs[key] == 1)
        #expect(prefs[key] == 2, "computed again at each read while nothing is stored")
        prefs[key] = 10
        #expect(prefs[key] == 10)
        #expect(calls.withLock { $0 } == 2, "not computed while a value is stored")
        let before = Date()
        #expect(prefs[.firstLaunch] >= before)
    }
}
