import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Nothing lost, nothing hung", item 9: re-entrant calls stop with a message naming the
/// misuse, reads inside a transaction work, and a cycle across two stores fails after the
/// timeout instead of hanging forever.
@Suite struct TransactionNestingTests {
    #if os(macOS) || os(Linux)
        @Test func updateInsideUpdateOnOneSQLiteStoreStopsWithAMessage() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let prefs = Preferences(store: try! SQLiteStore(path: TestFiles.uniquePath()))
                try? prefs.update { _ in try? prefs.update { p in p[.volume] = 1 } }
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("inside a transaction"), "\(message)")
            #expect(message.contains("SQLiteStore("), "\(message)")
        }
    #endif

    #if os(macOS) || os(Linux)
        @Test func aSubscriptWriteInsideUpdateOnAMemoryStoreStopsWithAMessage() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let prefs = Preferences(store: MemoryStore())
                try? prefs.update { _ in prefs[.volume] = 1 }
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("a write on MemoryStore inside a transaction"), "\(message)")
        }
    #endif

    /// `flush()` inside `update` cannot move the journal (the update holds it): it syncs it and
    /// returns.
    @Test func flushInsideUpdateReturns() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "queued")
        try Preferences(store: store).update { p in
            try store.flush()
            p[.launchCount] = 2
        }
        let reader = try SQLiteStore(path: path)
        #expect(reader.value(forKey: "queued") == .integer(1))
        #expect(reader.value(forKey: "launchCount") == .integer(2))
    }

    #if os(macOS) || os(Linux)
        /// A write to the store from inside its own `update` stops with a message, not a hang.
        @Test func aWriteInsideUpdateOnOneSQLiteStoreStopsWithAMessage() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let store = try! SQLiteStore(path: TestFiles.uniquePath())
                try? Preferences(store: store).update { _ in try? store.setValue(.integer(1), forKey: "k") }
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("inside a transaction"), "\(message)")
        }
    #endif

    #if os(macOS) || os(Linux)
        @Test func updateInsideUpdateOnUserDefaultsStopsWithAMessage() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let prefs = Preferences(store: TestDefaults.makeStore())
                try? prefs.update { _ in try? prefs.update { p in p[.volume] = 1 } }
            }
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("inside a transaction"), "\(message)")
        }
    #endif

    /// Reading through another handle inside `update` is allowed on every store (it used to hang
    /// on the memory store).
    @Test(arguments: StoreKind.allCases)
    func readsInsideUpdateWork(kind: StoreKind) throws {
        let prefs = IssueRecorder().preferences(kind.makeStore())
        prefs[.volume] = 0.25
        let seen = try prefs.update { p in
            p[.launchCount] = 1
            return (prefs[.volume], prefs.storedKeys.count)
        }
        #expect(seen.0 == 0.25)
        #expect(seen.1 == 1)
        #expect(prefs[.launchCount] == 1)
    }

    /// Two threads nesting transactions on two stores in opposite orders: the wait that closes
    /// the cycle fails at once with a typed error (long before the timeout, which stays for other
    /// processes), and the other thread completes; neither hangs.
    @Test(arguments: ["sqlite", "memory"])
    func aCycleAcrossTwoStoresFailsAtOnce(kind: String) throws {
        let timeout = Duration.seconds(60)
        let make: () throws -> any PreferenceStore = {
            kind == "sqlite"
                ? try SQLiteStore(path: TestFiles.uniquePath(), options: .init(lockTimeout: timeout))
                : MemoryStore(lockTimeout: timeout)
        }
        let a = try make()
        let b = try make()
        let bothInside = DispatchGroup()
        bothInside.enter()
        bothInside.enter()
        let outcomes = Locked<[String]>([])
        let finished = DispatchGroup()
        for (outer, inner) in [(a, b), (b, a)] {
            finished.enter()
            Thread.detachNewThread {
                defer { finished.leave() }
                do {
                    try outer.transaction { t in
                        t["outer"] = .bool(true)
                        bothInside.leave()
                        bothInside.wait()
                        try inner.transaction { $0["inner"] = .bool(true) }
                    }
                    outcomes.withLock { $0.append("done") }
                } catch let error as StoreError where error.kind == .deadlock {
                    outcomes.withLock { $0.append("deadlock") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(finished.wait(timeout: .now() + 20) == .success, "the cycle waited for the 60 s timeout")
        let results = outcomes.withLock { $0 }
        #expect(results.sorted() == ["deadlock", "done"], "\(results)")
    }

    /// Another thread's transaction held past the lock's timeout: the waiting transaction fails
    /// with `.busy`, naming the store, and its body never runs.
    @Test func aTransactionHeldPastTheTimeoutFailsAsBusy() throws {
        let store = MemoryStore(lockTimeout: .milliseconds(50))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holderDone = DispatchGroup()
        holderDone.enter()
        Thread.detachNewThread {
            defer { holderDone.leave() }
            try? store.transaction { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let bodyRan = Locked(false)
        #expect {
            try store.transaction { _ in bodyRan.withLock { $0 = true } }
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.kind == .busy && error.storeDescription == "MemoryStore"
                && error.message.contains("more than")
        }
        release.signal()
        holderDone.wait()
        #expect(!bodyRan.withLock { $0 })
    }
}
