import CPrefsShared

/// A 64-bit word that threads read and change without a lock: a flag or a counter.
///
/// ```swift
/// let queued = AtomicWord()
/// if queued.compareExchange(expected: 0, desired: 1) { /* this caller queues the work */ }
/// queued.store(0)
/// ```
///
/// Why not `Synchronization.Atomic`: it is available from macOS 15 / iOS 18 / tvOS 18 /
/// watchOS 11 / visionOS 2, above the package's floor, and a stored property cannot be marked
/// `@available` (`.ci/check-apple-floor` fails CI on any such use). The word lives in memory of
/// its own, like ``Locked``'s state, so it has a stable address for C's atomic operations.
package final class AtomicWord: @unchecked Sendable {
    // @unchecked: the word is touched only through atomic operations.
    private let word: UnsafeMutablePointer<UInt64>

    /// Creates the word holding `value`.
    package init(_ value: UInt64 = 0) {
        word = .allocate(capacity: 1)
        word.initialize(to: value)
    }

    deinit { word.deallocate() }

    /// The value, with acquire order: what was written before a ``store(_:)`` of it is seen.
    @inline(__always)
    package func load() -> UInt64 { prefs_atomic_load64(word) }

    /// The value with no ordering: a hint checked again by an ordered operation, or a statistic.
    @inline(__always)
    package func loadRelaxed() -> UInt64 { prefs_atomic_load64_relaxed(word) }

    /// Stores `value` with release order.
    @inline(__always)
    package func store(_ value: UInt64) { prefs_atomic_store64(word, value) }

    /// Adds `delta`, wrapping, and returns the new value (sequentially consistent).
    @discardableResult @inline(__always)
    package func add(_ delta: UInt64) -> UInt64 { prefs_atomic_add64(word, delta) }

    /// Subtracts `delta`, wrapping, and returns the new value (sequentially consistent).
    @discardableResult @inline(__always)
    package func subtract(_ delta: UInt64) -> UInt64 { prefs_atomic_subtract64(word, delta) }

    /// Stores `desired` if the word holds `expected`; true when it did (acquire and release).
    @inline(__always)
    package func compareExchange(expected: UInt64, desired: UInt64) -> Bool {
        prefs_atomic_compare_exchange64(word, expected, desired) != 0
    }
}
