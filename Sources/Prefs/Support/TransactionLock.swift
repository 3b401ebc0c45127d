import Foundation

/// The lock a store holds while a transaction's body runs: it knows which thread holds it, so a
/// nested write on the same store stops with a message instead of deadlocking, and it gives up
/// after a timeout, so two transactions waiting for each other (across two stores) fail instead
/// of hanging forever.
///
/// ```swift
/// let lock = TransactionLock(State(), store: "MemoryStore", timeout: .seconds(10))
/// try lock.withLock(during: "update") { state in … }
/// ```
///
/// Built on `NSLock` (a pthread mutex, which ThreadSanitizer understands): one held for the whole
/// transaction, which `lock(before:)` gives up waiting for, and one that guards who holds it.
package final class TransactionLock<State>: @unchecked Sendable {
    // Who holds the lock lives in a class of its own: ThreadSanitizer attributes every access to
    // a stored `var` of a generic class to the object's start, so a `holder` here would seem to
    // race with `state` (each is guarded, by different mutexes).
    private let ownership = Ownership()
    private let store: String
    private let timeout: Duration
    // Touched only while `ownership.mutex` is held. Paired with a count of the transactions run:
    // ThreadSanitizer reports accesses to a zero-size stored property (`State == Void`) as races
    // with the object's header, and the pair is never zero-size.
    private var storage: (state: State, transactions: UInt64)

    /// A lock around `state`, for the store `store` (named in messages), that waits at most
    /// `timeout` for another thread's transaction.
    package init(_ state: State, store: String, timeout: Duration) {
        self.storage = (state, 0)
        self.store = store
        self.timeout = timeout
    }

    /// Runs `body` holding the lock.
    ///
    /// Stops the program when this thread already holds it (`operation`, such as "a write", is
    /// named in the message), and throws ``TransactionTimeoutError`` when another thread holds it
    /// longer than the timeout.
    package func withLock<Result>(during operation: String, _ body: (inout State) throws -> Result) throws
        -> Result
    {
        if ownership.isHeldByCurrentThread {
            fatalError(
                """
                Prefs: \(operation) on \(store) inside a transaction (`update` or `transaction`) on \
                the same store, from the same thread. It would wait for itself forever. Read and \
                write through the transaction's own `p` (or `t`) instead, or make the call after \
                the transaction returns.
                """)
        }
        guard ownership.acquire(waitingUntil: Date(timeIntervalSinceNow: timeout.timeInterval)) else {
            throw TransactionTimeoutError(store: store, waited: timeout)
        }
        defer { ownership.release() }
        storage.transactions &+= 1
        return try body(&storage.state)
    }

    /// Whether the calling thread holds the lock (inside a transaction's body).
    package var isHeldByCurrentThread: Bool { ownership.isHeldByCurrentThread }
}

/// The mutex of a ``TransactionLock`` and the thread holding it.
private final class Ownership: @unchecked Sendable {
    let mutex = NSLock()
    private let holderLock = NSLock()
    private var holder: pthread_t?

    func acquire(waitingUntil deadline: Date) -> Bool {
        guard mutex.lock(before: deadline) else { return false }
        holderLock.withLock { holder = pthread_self() }
        return true
    }

    func release() {
        holderLock.withLock { holder = nil }
        mutex.unlock()
    }

    var isHeldByCurrentThread: Bool {
        holderLock.withLock { holder.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }
}

/// Another thread's transaction held a store longer than the store's timeout.
///
/// Two threads that nest transactions on two stores in opposite orders (`a.update { b.update … }`
/// and `b.update { a.update … }`) wait for each other; one of them gets this error instead of
/// both hanging forever.
///
/// ```swift
/// do { try prefs.update { … } } catch let error as TransactionTimeoutError { print(error) }
/// ```
public struct TransactionTimeoutError: Error, CustomStringConvertible, LocalizedError {
    /// The store that stayed locked.
    public let store: String
    /// How long the transaction waited.
    public let waited: Duration

    /// One line naming the store, the wait and the likely cause.
    public var description: String {
        "\(store): another thread's transaction held the store for more than \(waited) "
            + "(transactions nested on two stores in opposite orders wait for each other)"
    }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
