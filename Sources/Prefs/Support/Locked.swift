import Foundation

/// State guarded by a lock: the one way shared mutable state is kept in this library, and a
/// building block for stores of your own.
///
/// ```swift
/// let cache = Locked<[String: PropertyListValue]>([:])
/// cache.withLock { $0["volume"] = .double(0.5) }
/// ```
///
/// Why not `Synchronization.Mutex`: on Linux it locks with raw futex calls that ThreadSanitizer
/// cannot see, so every access under it is reported as a race and the sanitizer run (which CI
/// relies on) becomes useless. `NSLock` is a pthread mutex there, which the sanitizer understands.
public final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    /// Creates the lock around an initial state.
    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// Not reentrant: `body` must not call back into the same lock.
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
