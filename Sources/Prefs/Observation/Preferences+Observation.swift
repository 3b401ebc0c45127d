/// A change of one typed preference: its value before and after.
///
/// ```swift
/// let observation = prefs.observe(.volume) { change in
///     print("volume", change.oldValue, "→", change.newValue)
/// }
/// ```
public struct PreferenceChange<Value: PreferenceValue>: Sendable {
    /// The value before the change (the default when nothing was stored).
    public let oldValue: Value
    /// The value after the change (the default when the value was removed).
    public let newValue: Value
}

extension Preferences {
    /// The key's current value, then its value after every change, until the consuming task is
    /// cancelled or stops iterating; then the observation ends.
    ///
    /// ```swift
    /// for await volume in prefs.changes(of: .volume) {
    ///     player.volume = volume
    /// }
    /// ```
    ///
    /// Every change made through any handle on the same store object is seen, and, for stores that
    /// watch other processes or machines, theirs too. Values arrive in commit order; a value
    /// committed while the sequence starts may arrive twice, never out of order. A consumer that
    /// falls behind gets the newest value, not a backlog: the sequence holds at most one value
    /// waiting.
    public func changes<Value>(of key: Key<Value>) -> AsyncStream<Value> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observeValues(of: key) { value in continuation.yield(value) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Every change applied to the store, as sets of changed keys and their new stored values,
    /// until the consuming task is cancelled.
    ///
    /// ```swift
    /// for await change in prefs.changes() { print(change.values.keys.sorted()) }
    /// ```
    ///
    /// A consumer that falls behind gets the changes it missed merged into one (each key with its
    /// newest value), so the sequence never holds more than one change waiting.
    public func changes() -> AsyncStream<StoreChange> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = store.observe { change in
                // Delivery is serial, so these two yields never interleave with another change's.
                if case .dropped(let unread) = continuation.yield(change) {
                    continuation.yield(unread.merged(with: change))
                }
            }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `handler` with the old and new value each time the key's value changes, until the
    /// returned observation is cancelled or released.
    ///
    /// ```swift
    /// let observation = prefs.observe(.volume) { change in print(change.newValue) }
    /// ```
    ///
    /// The handler runs on the store's delivery queue, never under a store lock: it may read and
    /// write preferences, this key included.
    public func observe<Value>(
        _ key: Key<Value>, handler: @escaping @Sendable (PreferenceChange<Value>) -> Void
    ) -> StoreObservation {
        let last = Locked<Value?>(nil)
        return observeValues(of: key) { value in
            let previous = last.withLock { last in
                defer { last = value }
                return last
            }
            // The first value is the starting point, not a change.
            if let previous { handler(PreferenceChange(oldValue: previous, newValue: value)) }
        }
    }

    /// Calls `handler` with every change that touches at least one of `keys`, narrowed to those
    /// keys, until the returned observation is cancelled or released.
    ///
    /// ```swift
    /// let observation = prefs.observe(.volume, .theme) { change in print(change.values.keys) }
    /// ```
    public func observe(_ keys: Keys..., handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        let names = Set(keys.map { StoreKey($0.name) })
        return store.observe { change in
            let relevant = change.values.filter { names.contains($0.key) }
            if !relevant.isEmpty { handler(StoreChange(values: relevant)) }
        }
    }

    /// Calls `handler` with every change applied to the store, until the returned observation is
    /// cancelled or released.
    ///
    /// ```swift
    /// let observation = prefs.observeAll { change in print(change.values) }
    /// ```
    public func observeAll(handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        store.observe(handler)
    }

    /// Delivers the key's current value, then its value after each change, in order.
    ///
    /// The store delivers changes on its own queue while the current value is read here, so the
    /// two are put in order under one lock: changes delivered before the current value was sent
    /// are already part of it and are dropped; later ones follow it.
    private func observeValues<Value>(
        of key: Key<Value>, deliver: @escaping @Sendable (Value) -> Void
    ) -> StoreObservation {
        let startedDelivering = Locked(false)
        let observation = store.observe { [self] change in
            guard let stored = change.values[StoreKey(key.name)] else { return }
            startedDelivering.withLock { started in
                if started { deliver(decode(stored, for: key)) }
            }
        }
        startedDelivering.withLock { started in
            deliver(self[key])
            started = true
        }
        return observation
    }
}
