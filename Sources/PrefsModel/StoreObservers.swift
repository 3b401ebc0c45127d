import Dispatch
import PrefsSupport

/// A set of changes applied to a store at once: each key set to its new value, or removed.
///
/// ```swift
/// let observation = store.observe { change in
///     if case .set(let volume)? = change.values["volume"] { print("volume is now", volume) }
/// }
/// ```
public struct StoreChange: Sendable, Equatable, CustomStringConvertible {
    /// The changed keys and what happened to each.
    public let values: [StoreKey: ValueChange]

    /// Creates a change.
    ///
    /// ```swift
    /// StoreChange(values: ["volume": .set(.double(0.8)), "theme": .removed])
    /// ```
    public init(values: [StoreKey: ValueChange]) {
        self.values = values
    }

    /// Each changed key and what happened to it, one after another in key order.
    ///
    /// ```swift
    /// print(StoreChange(values: ["volume": .set(.double(0.8))]))  // volume set to float 0.8
    /// ```
    public var description: String {
        values.sorted { $0.key < $1.key }.map { "\($0.key.name) \($0.value)" }.joined(separator: "; ")
    }

    /// A change from each key's new value, `nil` for a removal (the stores' own bookkeeping).
    package init(newValues: [StoreKey: PropertyListValue?]) {
        self.values = newValues.mapValues(ValueChange.init)
    }

    /// This change followed by `later`: every key of both, with `later`'s value where both have one.
    ///
    /// ```swift
    /// StoreChange(values: ["a": .set(.integer(1))]).merged(with: StoreChange(values: ["a": .removed]))
    /// ```
    package func merged(with later: StoreChange) -> StoreChange {
        StoreChange(values: values.merging(later.values) { _, newer in newer })
    }
}

/// The observers of one store, and the delivery of its changes to them.
///
/// A store calls ``publish(_:)`` in commit order, while it still holds its own lock, so that
/// changes are delivered in the order they were applied. Delivery is asynchronous, on one serial
/// queue per store: a handler never runs under the store's lock (it may read or write the store),
/// and a slow handler delays other handlers, never writers.
///
/// ```swift
/// let observers = StoreObservers(label: "MyStore")
/// observers.publish(StoreChange(values: ["k": .set(.bool(true))]))
/// ```
public final class StoreObservers: Sendable {
    private struct Registry {
        /// Numbers in 64 bits: an `Int` only growing would trap after 2³¹ observations on a
        /// 32-bit `Int` (every Apple Watch).
        var nextID: UInt64 = 0
        var handlers: [UInt64: @Sendable (StoreChange) -> Void] = [:]
    }

    private let registry = Locked(Registry())
    /// How many handlers the registry holds, set under its lock: every write of a store asks,
    /// and a load is a tenth of a lock's cost.
    private let handlerCount = AtomicWord()
    private let delivery: DispatchQueue

    /// Creates an empty set of observers; `label` names the delivery queue in debuggers.
    ///
    /// ```swift
    /// let observers = StoreObservers(label: "MemoryStore")
    /// ```
    public init(label: String) {
        delivery = DispatchQueue(label: "prefs.observers.\(label)")
    }

    /// The number of live observations (a test for leaks: it returns to zero).
    ///
    /// ```swift
    /// observers.count  // 0
    /// ```
    package var count: Int {
        Int(truncatingIfNeeded: handlerCount.load())  // a count of live handlers
    }

    /// Adds a handler; it is called for every change published until the observation ends.
    ///
    /// ```swift
    /// let observation = observers.add { change in print(change) }
    /// ```
    public func add(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        let id = registry.withLock { registry in
            registry.nextID += 1
            registry.handlers[registry.nextID] = handler
            handlerCount.store(UInt64(registry.handlers.count))
            return registry.nextID
        }
        return StoreObservation { [weak self] in
            self?.registry.withLock { registry in
                registry.handlers.removeValue(forKey: id)
                self?.handlerCount.store(UInt64(registry.handlers.count))
            }
        }
    }

    /// Queues a change for delivery to every handler; returns at once.
    ///
    /// ```swift
    /// observers.publish(StoreChange(values: ["volume": .set(.double(0.8))]))
    /// ```
    public func publish(_ change: StoreChange) {
        guard !change.values.isEmpty else { return }
        // The handlers registered now get the change (one that registers later does not see what
        // happened before it); each is skipped if its observation ends before delivery.
        let recipients = registry.withLock { $0.handlers.keys.sorted() }
        guard !recipients.isEmpty else { return }
        delivery.async { [self] in
            for id in recipients {
                registry.withLock { $0.handlers[id] }?(change)
            }
        }
    }

    /// Waits until every change published so far has been delivered.
    ///
    /// ```swift
    /// observers.waitForDelivery()
    /// ```
    package func waitForDelivery() {
        delivery.sync {}
    }
}

/// A live observation; it ends when cancelled or released.
///
/// ```swift
/// let observation = store.observe { change in print(change) }
/// observation.cancel()
/// ```
public final class StoreObservation: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    /// Creates an observation that runs `onCancel` once, when cancelled or released.
    ///
    /// ```swift
    /// let observation = StoreObservation { print("ended") }
    /// ```
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Locked(onCancel)
    }

    /// Ends the observation; later changes are not delivered.
    ///
    /// Calling it again does nothing.
    ///
    /// ```swift
    /// observation.cancel()
    /// ```
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit {
        cancel()
    }
}
