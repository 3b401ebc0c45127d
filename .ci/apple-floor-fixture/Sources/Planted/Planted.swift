import Synchronization

/// A stored `Atomic`: no `@available` can cover a stored property, so Apple rejects it.
final class Counter: Sendable {
    let count = Atomic<Int>(0)  // caught
}

/// A standard-library function from macOS 15 / iOS 18, used at the floor.
func bigIndices(_ numbers: [Int]) -> Int {
    numbers.indices(where: { $0 > 1 }).ranges.count  // caught
}

/// The same function for every Apple platform inside `if #available`: fine.
func guardedEverywhere(_ numbers: [Int]) -> Int {
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
        return numbers.indices(where: { $0 > 1 }).ranges.count
    }
    return 0
}

/// `if #available(macOS 15, *)` covers macOS only: on iOS the compiler rejects this use.
func guardedOnMacOnly(_ numbers: [Int]) -> Int {
    if #available(macOS 15, *) {
        return numbers.indices(where: { $0 > 1 }).ranges.count  // caught
    }
    return 0
}

/// After `guard #available … else { return }` the rest of the scope is covered.
func afterGuard(_ numbers: [Int]) -> Int {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return 0 }
    let mutex = Mutex(0)
    return mutex.withLock { $0 } + numbers.count
}

/// A declaration marked `@available` for every platform: fine inside.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
func declaredLater() -> Int {
    Atomic<Int>(1).load(ordering: .relaxed)
}

/// Code Apple never builds.
#if os(Linux)
    func linuxOnly() -> Int { Atomic<Int>(2).load(ordering: .relaxed) }
#endif

/// A comment or a string that names `Atomic` is not a use: "Atomic<Int>(0)".
func unrelated() -> String { "Atomic<Int>(0)" }
