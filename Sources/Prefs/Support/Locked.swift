import Foundation

/// State guarded by a lock: the one way shared mutable state is kept in this library.
///
/// Why not `Synchronization.Mutex`: on Linux it locks with raw futex calls that ThreadSanitizer
/// cannot see, so every access under it is reported as a race and the sanitizer run (which CI
/// relies on) becomes useless. `NSLock` is a pthread mutex there, which the sanitizer understands.
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// Not reentrant: `body` must not call back into the same lock.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
