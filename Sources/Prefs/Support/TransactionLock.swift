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
/// Built on `NSCondition` (a pthread mutex and condition variable), which ThreadSanitizer
/// understands; the state is only touched by the thread that holds the lock.
package final class TransactionLock<State>: @unchecked Sendable {
    private let condition = NSCondition()
    private var holder: pthread_t?
    private var state: State
    private let store: String
    private let timeout: Duration

    /// A lock around `state`, for the store `store` (named in messages), that waits at most
    /// `timeout` for another thread's transaction.
    package init(_ state: State, store: String, timeout: Duration) {
        self.state = state
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
        try acquire(operation)
        defer { release() }
        return try body(&state)
    }

    /// Whether the calling thread holds the lock (inside a transaction's body).
    package var isHeldByCurrentThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        return holder.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    private func acquire(_ operation: String) throws {
        let me = pthread_self()
        let deadline = Date(timeIntervalSinceNow: timeout.timeInterval)
        condition.lock()
        defer { condition.unlock() }
        if let holder, pthread_equal(holder, me) != 0 {
            // Unlocking first would let the message race with nothing; the program stops anyway.
            preconditionFailure(
                """
                Prefs: \(operation) on \(store) inside a transaction (`update` or `transaction`) on \
                the same store, from the same thread. It would wait for itself forever. Read and \
                write through the transaction's own `p` (or `t`) instead, or make the call after \
                the transaction returns.
                """)
        }
        while holder != nil {
            guard condition.wait(until: deadline) || holder == nil else {
                throw TransactionTimeoutError(store: store, waited: timeout)
            }
        }
        holder = me
    }

    private func release() {
        condition.lock()
        holder = nil
        condition.signal()
        condition.unlock()
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
public struct TransactionTimeoutError: Error, CustomStringConvertible {
    /// The store that stayed locked.
    public let store: String
    /// How long the transaction waited.
    public let waited: Duration

    /// One line naming the store, the wait and the likely cause.
    public var description: String {
        "\(store): another thread's transaction held the store for more than \(waited) "
            + "(transactions nested on two stores in opposite orders wait for each other)"
    }
}
