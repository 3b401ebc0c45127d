import CPrefsShared
import Foundation

/// State guarded by a lock: the one way shared mutable state is kept in this library (and its
/// sibling modules and tests).
///
/// ```swift
/// let cache = Locked<[String: PropertyListValue]>([:])
/// cache.withLock { $0["volume"] = .double(0.5) }
/// ```
///
/// The lock is `prefs_mutex` (`os_unfair_lock` on Apple platforms, a futex word elsewhere):
/// taking and giving it back costs one atomic instruction each when nobody else holds it, which
/// matters on a store's read path. Why not `Synchronization.Mutex`: it needs macOS 15 and iOS 18,
/// and on Linux ThreadSanitizer cannot see how it hands the lock over, so every access under it
/// is reported as a race. This lock always takes the word with an acquiring atomic operation and
/// gives it back with a releasing one, which the sanitizer understands.
///
/// The state lives in memory of its own rather than in a stored property, so an access under
/// the lock needs no run-time exclusivity check: the lock is what makes it exclusive.
package final class Locked<State> {
    private let mutex: UnsafeMutablePointer<prefs_mutex>
    private let state: UnsafeMutablePointer<State>

    /// Creates the lock around an initial state.
    package init(_ state: State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: prefs_mutex())
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// Not reentrant: `body` must not call back into the same lock.
    @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        prefs_mutex_lock(mutex)
        defer { prefs_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }

    /// Runs `body` with exclusive access once the lock is free, looking for it every millisecond;
    /// `nil`, without running `body`, once `giveUp` answers true first.
    ///
    /// For a wait that must end when asked (the system taking background time back), which
    /// ``withLock(_:)`` cannot: a thread asleep on the lock wakes only when the holder lets go.
    ///
    /// ```swift
    /// let done = cache.withLock(unless: { expiry.isExpired }) { $0.count }
    /// ```
    package func withLock<Result>(unless giveUp: () -> Bool, _ body: (inout State) throws -> Result)
        rethrows -> Result?
    {
        while !prefs_mutex_trylock(mutex) {
            if giveUp() { return nil }
            usleep(1_000)
        }
        defer { prefs_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}

/// The lock makes the state safe to share, but only a `Sendable` state may be handed to another
/// thread through it. (`@unchecked`: the pointers are the lock's own, touched only under it.)
extension Locked: @unchecked Sendable where State: Sendable {}
