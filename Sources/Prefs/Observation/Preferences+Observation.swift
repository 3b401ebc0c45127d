import PrefsSupport

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

/// What an observation does besides reporting changes.
///
/// ```swift
/// let observation = prefs.observe(.volume, options: .initial) { change in apply(change.newValue) }
/// ```
public struct ObservationOptions: OptionSet, Sendable {
    /// The options' bits.
    public let rawValue: Int

    /// Creates options from their raw bits.
    ///
    /// ```swift
    /// let none = ObservationOptions(rawValue: 0)
    /// ```
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Calls the handler at once with the current value, before any change.
    ///
    /// The current value comes as both the old and the new value. Without this option (the
    /// default), the first call is the first change.
    ///
    /// ```swift
    /// prefs.observe(.volume, options: .initial) { change in player.volume = change.newValue }
    /// ```
    public static let initial = ObservationOptions(rawValue: 1 << 0)
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
            // The store and the administrator's layer deliver on queues of their own: one lock
            // keeps a change's two yields from interleaving with another's.
            let yielding = Locked(())
            let observation = observeStoreAndLayer(keys: nil, inEffect: true) { change in
                yielding.withLock { _ in
                    if case .dropped(let unread) = continuation.yield(change) {
                        continuation.yield(unread.merged(with: change))
                    }
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
    ///
    /// With `options: .initial` the handler is called at once with the current value, as both
    /// its old and its new value.
    public func observe<Value>(
        _ key: Key<Value>, options: ObservationOptions = [],
        handler: @escaping @Sendable (PreferenceChange<Value>) -> Void
    ) -> StoreObservation {
        let last = Locked<Value?>(nil)
        return observeValues(of: key) { value in
            let previous = last.withLock { last in
                defer { last = value }
                return last
            }
            if let previous {
                handler(PreferenceChange(oldValue: previous, newValue: value))
            } else if options.contains(.initial) {
                handler(PreferenceChange(oldValue: value, newValue: value))
            }
            // Otherwise the first value is the starting point, not a change.
        }
    }

    /// The keys' current values together, then again each time any of them changes, until the
    /// consuming task is cancelled (two keys or more).
    ///
    /// ```swift
    /// for await (volume, muted) in prefs.changes(of: .volume, .muted) {
    ///     player.volume = muted ? 0 : volume
    /// }
    /// ```
    ///
    /// A write of several of the keys (an `update`) arrives once, with all its values. A consumer
    /// that falls behind gets the newest values.
    public func changes<First, each Other>(of first: Key<First>, _ other: repeat Key<each Other>)
        -> AsyncStream<(First, repeat each Other)>
    {
        let reader = KeyPackReader(self, first, repeat each other)
        return valueStream(of: reader.keys) { reader.read() }
    }

    /// Calls `handler` with the keys' typed values each time any of them changes (once for a
    /// write of several), until the returned observation is cancelled or released (for two,
    /// three or four keys).
    ///
    /// ```swift
    /// let observation = prefs.observe(.volume, .muted, options: .initial) { volume, muted in
    ///     player.volume = muted ? 0 : volume
    /// }
    /// ```
    public func observe<A, B>(
        _ a: Key<A>, _ b: Key<B>, options: ObservationOptions = [],
        handler: @escaping @Sendable (A, B) -> Void
    ) -> StoreObservation {
        observeValues(of: [a, b], options: options) { handler(self[a], self[b]) }
    }

    /// The same for three keys.
    ///
    /// ```swift
    /// prefs.observe(.width, .height, .scale) { width, height, scale in … }
    /// ```
    public func observe<A, B, C>(
        _ a: Key<A>, _ b: Key<B>, _ c: Key<C>, options: ObservationOptions = [],
        handler: @escaping @Sendable (A, B, C) -> Void
    ) -> StoreObservation {
        observeValues(of: [a, b, c], options: options) { handler(self[a], self[b], self[c]) }
    }

    /// The same for four keys.
    ///
    /// ```swift
    /// prefs.observe(.red, .green, .blue, .alpha) { r, g, b, a in … }
    /// ```
    public func observe<A, B, C, D>(
        _ a: Key<A>, _ b: Key<B>, _ c: Key<C>, _ d: Key<D>, options: ObservationOptions = [],
        handler: @escaping @Sendable (A, B, C, D) -> Void
    ) -> StoreObservation {
        observeValues(of: [a, b, c, d], options: options) { handler(self[a], self[b], self[c], self[d]) }
    }

    /// Whether the key's value is its default (nothing is stored, or what is stored equals it).
    ///
    /// ```swift
    /// prefs.isDefaultValue(.volume)  // true until the volume changes
    /// ```
    public func isDefaultValue<Value: Equatable>(_ key: Key<Value>) -> Bool {
        self[key] == key.defaultValue
    }

    /// Calls `handler` with every change applied to the store — or, given keys, every change
    /// that touches one of them, narrowed to those keys — as stored values, until the returned
    /// observation is cancelled or released.
    ///
    /// ```swift
    /// let everything = prefs.observeChanges { change in print(change.values) }
    /// let some = prefs.observeChanges(to: .volume, .theme) { change in print(change.values.keys) }
    /// ```
    ///
    /// For typed values, use ``observe(_:options:handler:)``.
    public func observeChanges(to keys: Keys..., handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        guard !keys.isEmpty else { return observeStoreAndLayer(keys: nil, inEffect: true, handler) }
        let names = Set(keys.map { StoreKey($0.name) })
        return observeStoreAndLayer(keys: keys.map(\.name), inEffect: true) { change in
            let relevant = change.values.filter { names.contains($0.key) }
            if !relevant.isEmpty { handler(StoreChange(values: relevant)) }
        }
    }

    /// Calls `handler` with each change of `keys` (every key: `nil`) in the store, and with each
    /// change of the administrator's layer when there is one (its file replaced): what `@Pref`,
    /// groups and `observeChanges(to:handler:)` see.
    ///
    /// With `inEffect`, a change of the layer is given as the values now in effect (locked, else
    /// stored, else the layer's default; `.removed` when none): a key whose stored value hides
    /// the layer's new default did not change, and is left out.
    /// Reports a problem an observed administrator's layer found reading its file again.
    private var reportLayerProblem: @Sendable (String) -> Void {
        { [store, diagnostics] problem in
            diagnostics.report(
                PreferenceIssue(key: "", store: store.description, kind: .storeNotice(problem)))
        }
    }

    func observeStoreAndLayer(
        keys: [String]?, inEffect: Bool = false, _ handler: @escaping @Sendable (StoreChange) -> Void
    ) -> StoreObservation {
        // Every key: the values' changes, not the library's records (a migration's).
        let observation =
            keys.map { store.observe(watching: $0, handler) }
            ?? store.observe { change in
                let values = change.values.filter { !ReservedKeys.contains($0.key.name) }
                if !values.isEmpty {
                    handler(values.count == change.values.count ? change : StoreChange(values: values))
                }
            }
        guard let system else { return observation }
        let layerObservation = system.observe(
            { [store] change in
                guard inEffect else { return handler(change) }
                var values: [StoreKey: ValueChange] = [:]
                for key in change.values.keys {
                    if let locked = system.lockedValue(forKey: key.name) {
                        values[key] = .set(locked)
                    } else if store.value(forKey: key.name) == nil {
                        values[key] = ValueChange(system.defaultValue(forKey: key.name))
                    }
                }
                if !values.isEmpty { handler(StoreChange(values: values)) }
            },
            problems: reportLayerProblem)
        return StoreObservation(onCancel: {
            observation.cancel()
            layerObservation.cancel()
        })
    }

    /// Delivers the key's current value, then its value after each change, in order.
    private func observeValues<Value>(
        of key: Key<Value>, deliver: @escaping @Sendable (Value) -> Void
    ) -> StoreObservation {
        let name = StoreKey(key.name)
        return inOrder(
            observing: [key], now: { deliver(self[key]) },
            onChange: { [self] change in
                guard let stored = change.values[name] else { return }
                // Under an administrator's layer the value is not simply what was stored.
                deliver(system == nil ? decode(stored.newValue, for: key) : self[key])
            })
    }

    /// Runs `now` at once, then `onChange` for each change the store delivers after it, in order.
    ///
    /// The store delivers changes on its own queue while `now` reads current values here, so the
    /// two are put in order under one lock: changes delivered before `now` ran are already part
    /// of what it read and are dropped; later ones follow it.
    private func inOrder(
        observing keys: [Keys], now: () -> Void, onChange: @escaping @Sendable (StoreChange) -> Void
    ) -> StoreObservation {
        let startedDelivering = Locked(false)
        let afterNow: @Sendable (StoreChange) -> Void = { change in
            startedDelivering.withLock { started in
                if started { onChange(change) }
            }
        }
        let observation = store.observe(watching: keys.map(\.name), afterNow)
        // An administrator's file replaced is a change like any other.
        let layerObservation = system?.observe(afterNow, problems: reportLayerProblem)
        startedDelivering.withLock { started in
            now()
            started = true
        }
        guard let layerObservation else { return observation }
        return StoreObservation(onCancel: {
            observation.cancel()
            layerObservation.cancel()
        })
    }

    /// A stream of `read()`: now, then after each change touching any of `keys`.
    private func valueStream<Values>(of keys: [Keys], read: @escaping @Sendable () -> Values) -> AsyncStream<
        Values
    > {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observeAny(of: keys) { continuation.yield(read()) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `deliver` after each change touching any of `keys`, and at once with `.initial`.
    private func observeValues(
        of keys: [Keys], options: ObservationOptions, deliver: @escaping @Sendable () -> Void
    ) -> StoreObservation {
        let started = Locked(false)
        return observeAny(of: keys) {
            let isFirst = started.withLock { started in
                defer { started = true }
                return !started
            }
            if !isFirst || options.contains(.initial) { deliver() }
        }
    }

    /// Calls `deliver` once at once, then after each change touching any of `keys`, in order
    /// (as ``observeValues(of:deliver:)`` does for one key).
    private func observeAny(of keys: [Keys], deliver: @escaping @Sendable () -> Void) -> StoreObservation {
        let names = Set(keys.map { StoreKey($0.name) })
        return inOrder(observing: keys, now: deliver) { change in
            if change.values.keys.contains(where: names.contains) { deliver() }
        }
    }
}

/// Reads several keys' values as one tuple.
///
/// A class holding the keys, so that a closure calling it captures an object: Swift 6.3 crashes
/// compiling a closure that captures a parameter pack itself.
private final class KeyPackReader<First: PreferenceValue, each Other: PreferenceValue>: Sendable {
    let preferences: Preferences
    let first: Preferences.Key<First>
    let other: (repeat Preferences.Key<each Other>)

    init(
        _ preferences: Preferences, _ first: Preferences.Key<First>,
        _ other: repeat Preferences.Key<each Other>
    ) {
        self.preferences = preferences
        self.first = first
        self.other = (repeat each other)
    }

    /// The keys, in order.
    var keys: [Preferences.Keys] {
        var keys: [Preferences.Keys] = [first]
        for key in repeat each other { keys.append(key) }
        return keys
    }

    func read() -> (First, repeat each Other) { (preferences[first], repeat preferences[each other]) }
}
