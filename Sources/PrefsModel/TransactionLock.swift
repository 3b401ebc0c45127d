import CPrefsShared
import Foundation
import PrefsSupport

/// The lock a store holds while a transaction's body runs: it knows which thread holds it, so a
/// nested write on the same store stops with a message instead of deadlocking, and it gives up
/// after a timeout, so two transactions waiting for each other (across two stores) fail instead
/// of hanging forever.
///
/// ```swift
/// let lock = TransactionLock([String: Int](), store: "MemoryStore", timeout: .seconds(10))
/// try lock.withLock(during: "update") { state in state["count", default: 0] += 1 }
/// ```
///
/// Built on `NSLock` (a pthread mutex, which ThreadSanitizer understands), held for the whole
/// transaction, which `lock(before:)` gives up waiting for; who holds it is an atomic word. A lock
/// nobody holds costs two mutex calls and two atomic stores (every store write takes one).
package final class TransactionLock<State>: @unchecked Sendable {
    // Who holds the lock lives in an object of its own, which the wait graph (deadlock
    // detection) refers to without knowing the state's type.
    @usableFromInline let ownership = Ownership()
    private let store: String
    @usableFromInline let timeout: Duration
    // Touched only while `ownership.mutex` is held. In memory of its own rather than a stored
    // `var`, so an access needs no run-time exclusivity check (the lock makes it exclusive).
    @usableFromInline let state: UnsafeMutablePointer<State>

    /// A lock around `state`, for the store `store` (named in messages), that waits at most
    /// `timeout` for another thread's transaction.
    package init(_ state: State, store: String, timeout: Duration) {
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        self.store = store
        self.timeout = timeout
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` holding the lock.
    ///
    /// Stops the program when this thread already holds it (`operation`, such as "a write", is
    /// named in the message), and throws ``StoreError`` (`.busy`) when another thread holds it
    /// longer than the timeout, and (`.deadlock`) when waiting would close a cycle.
    // Inlinable so the engine's commit path, in another module, gets a copy specialized for its
    // state: the generic one cost a write at 100 keys ~15% (prefs-bench). The messages stay in
    // the functions below, out of every inlined copy.
    @inlinable
    package func withLock<Result>(during operation: String, _ body: (inout State) throws -> Result) throws
        -> Result
    {
        if ownership.isHeldByCurrentThread { stopNested(operation) }
        let outcome = ownership.acquire(timeout: timeout)
        guard outcome == .acquired else { throw waitFailure(outcome) }
        defer { ownership.release() }
        return try body(&state.pointee)
    }

    /// The same, waiting in short steps that end, throwing `.expired`, as soon as `giveUp`
    /// answers true (the system taking its background time back) instead of at the timeout.
    ///
    /// <!-- swift: not compiled (a store's own lock, inside the engine) -->
    /// ```swift
    /// try lock.withLock(during: "a sync's write", givingUpWhen: { expiry.isExpired }) { state in }
    /// ```
    package func withLock<Result>(
        during operation: String, givingUpWhen giveUp: () -> Bool, _ body: (inout State) throws -> Result
    ) throws -> Result {
        if ownership.isHeldByCurrentThread { stopNested(operation) }
        let deadline = ContinuousClock.now + timeout
        while true {
            let outcome = ownership.acquire(timeout: min(timeout, .milliseconds(50)))
            if outcome == .acquired { break }
            if outcome == .deadlock { throw waitFailure(outcome) }
            if giveUp() {
                throw StoreError(
                    kind: .expired, store: store,
                    message:
                        "\(operation) waited for another thread's transaction when the system took the time back"
                )
            }
            if ContinuousClock.now >= deadline { throw waitFailure(outcome) }
        }
        defer { ownership.release() }
        return try body(&state.pointee)
    }

    @usableFromInline
    func stopNested(_ operation: String) -> Never {
        fatalError(
            """
            Prefs: \(operation) on \(store) inside a transaction (`update` or `transaction`) on \
            the same store, from the same thread. It would wait for itself forever. Read and \
            write through the transaction's own `p` (or `t`) instead, or make the call after \
            the transaction returns.
            """)
    }

    /// The error for a wait that did not acquire the lock (`.timedOut` or `.deadlock`).
    @usableFromInline
    func waitFailure(_ outcome: Ownership.Outcome) -> StoreError {
        guard outcome == .deadlock else {
            return StoreError(
                kind: .busy, store: store,
                message: "another thread's transaction held the store for more than \(timeout) "
                    + "(transactions nested on two stores in opposite orders wait for each other)")
        }
        return StoreError(
            kind: .deadlock, store: store,
            message: "waiting for it would never end: its transaction waits, directly or through "
                + "others, for a store this thread's transaction holds (transactions nested on stores "
                + "in opposite orders)")
    }

    /// Whether the calling thread holds the lock (inside a transaction's body).
    package var isHeldByCurrentThread: Bool { ownership.isHeldByCurrentThread }
}

/// The mutex of a ``TransactionLock`` and the thread holding it.
@usableFromInline
final class Ownership: @unchecked Sendable {
    let mutex = NSLock()
    /// The thread holding `mutex`, 0 when none: written only by that thread (while it holds
    /// `mutex`), so a thread always reads its own writes; another thread that learned through a
    /// lock that the holder let go (``WaitGraph``) reads that too.
    private let holder: UnsafeMutablePointer<UInt64>

    @usableFromInline enum Outcome { case acquired, timedOut, deadlock }

    init() {
        holder = .allocate(capacity: 1)
        holder.initialize(to: 0)
    }

    deinit { holder.deallocate() }

    @usableFromInline func acquire(timeout: Duration) -> Outcome {
        if !mutex.try() {
            // About to wait: a wait that would close a cycle of this process's transactions
            // (each thread holding a lock the next one waits for) would never end.
            guard WaitGraph.startWaiting(for: self) else { return .deadlock }
            defer { WaitGraph.stopWaiting() }
            guard mutex.lock(before: Date(timeIntervalSinceNow: timeout.timeInterval)) else {
                return .timedOut
            }
        }
        prefs_atomic_store64_relaxed(holder, UInt64(currentThreadID()))
        return .acquired
    }

    @usableFromInline func release() {
        prefs_atomic_store64_relaxed(holder, 0)
        mutex.unlock()
    }

    var currentHolder: UInt? {
        let thread = prefs_atomic_load64_relaxed(holder)
        return thread == 0 ? nil : UInt(truncatingIfNeeded: thread)  // stored from a UInt
    }

    @usableFromInline var isHeldByCurrentThread: Bool {
        prefs_atomic_load64_relaxed(holder) == UInt64(currentThreadID())
    }
}

/// Which thread of the process waits for which transaction lock: enough to see a cycle the
/// moment the wait that closes it begins, as databases report a deadlock, instead of every
/// thread of the cycle waiting out its timeout. (Other processes' locks are not in it: for them
/// the timeout stays.)
private enum WaitGraph {
    private static let waiting = Locked<[UInt: Ownership]>([:])

    /// Records that this thread waits for `lock`; false (nothing recorded) when that closes a cycle.
    static func startWaiting(for lock: Ownership) -> Bool {
        let me = currentThreadID()
        return waiting.withLock { waiting in
            var next = lock.currentHolder
            var steps = 0
            while let holder = next, steps <= waiting.count {
                if holder == me { return false }
                next = waiting[holder]?.currentHolder
                steps += 1
            }
            waiting[me] = lock
            return true
        }
    }

    static func stopWaiting() {
        let me = currentThreadID()
        _ = waiting.withLock { $0.removeValue(forKey: me) }
    }
}

/// The calling thread's identity, as a number.
private func currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())  // in range: Linux's pthread_t is a UInt
    #endif
}
