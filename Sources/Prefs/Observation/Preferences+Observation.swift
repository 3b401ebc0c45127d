import PrefsSupport

extension Preferences {
    // One rule for every form: a handler gets what the stream of the same keys yields, the
    // current value first unless `initial: false`, then the value after every change that
    // touches the keys, in commit order. One key gives its value, several keys their values
    // together (once for a write of several).

    /// The key's current value (unless `initial` is `false`), then its value after every
    /// change, until the consuming task is cancelled or stops iterating.
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
    /// waiting. ``observe(_:initial:handler:)`` delivers the same values to a handler.
    public func changes<Value>(of key: Key<Value>, initial: Bool = true) -> AsyncStream<Value> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observe(key, initial: initial) { value in continuation.yield(value) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `handler` with the key's current value (unless `initial` is `false`), then with its
    /// value after every change, until the returned observation is cancelled or released: what
    /// ``changes(of:initial:)`` yields.
    ///
    /// ```swift
    /// let observation = prefs.observe(.volume) { volume in player.volume = volume }
    /// let later = prefs.observe(.volume, initial: false) { volume in print("changed to", volume) }
    /// ```
    ///
    /// The handler runs on the store's delivery queue (the current value on the calling thread),
    /// never under a store lock: it may read and write preferences, this key included.
    public func observe<Value>(
        _ key: Key<Value>, initial: Bool = true, handler: @escaping @Sendable (Value) -> Void
    ) -> StoreObservation {
        let skipping = Locked(!initial)
        return observeValues(of: key) { value in
            let skip = skipping.withLock { skipping in
                defer { skipping = false }
                return skipping
            }
            if !skip { handler(value) }
        }
    }

    /// Several keys' current values together (unless `initial` is `false`), then again each time
    /// any of them changes, until the consuming task is cancelled.
    ///
    /// ```swift
    /// for await (volume, muted) in prefs.changes(of: .volume, .muted) {
    ///     player.volume = muted ? 0 : volume
    /// }
    /// ```
    ///
    /// A write of several of the keys (an `update`) arrives once, with all its values. A consumer
    /// that falls behind gets the newest values.
    public func changes<First, Second, each Other>(
        of first: Key<First>, _ second: Key<Second>, _ other: repeat Key<each Other>, initial: Bool = true
    ) -> AsyncStream<(First, Second, repeat each Other)> {
        let reader = KeyPackReader(self, first, second, repeat each other)
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observeStored(of: reader.keys, initial: initial) { stored in
                continuation.yield(reader.read(stored))
            }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `handler` with several keys' values together: at once (unless `initial` is
    /// `false`), then each time any of them changes (once for a write of several), until the
    /// returned observation is cancelled or released: what ``changes(of:_:_:initial:)`` yields.
    ///
    /// ```swift
    /// let observation = prefs.observe(.volume, .muted) { volume, muted in
    ///     player.volume = muted ? 0 : volume
    /// }
    /// ```
    public func observe<First, Second, each Other>(
        _ first: Key<First>, _ second: Key<Second>, _ other: repeat Key<each Other>, initial: Bool = true,
        handler: @escaping @Sendable (First, Second, repeat each Other) -> Void
    ) -> StoreObservation {
        let reader = KeyPackReader(self, first, second, repeat each other)
        let deliverer = KeyPackDeliverer(reader: reader, handler: handler)
        return observeStored(of: reader.keys, initial: initial) { stored in deliverer.deliver(stored) }
    }

    /// Whether the key's value is its default (nothing is stored, or what is stored equals it).
    ///
    /// ```swift
    /// prefs.isDefaultValue(.volume)  // true until the volume changes
    /// ```
    public func isDefaultValue<Value: Equatable>(_ key: Key<Value>) -> Bool {
        self[key] == key.defaultValue
    }

    /// Calls `handler` with every change that touches one of the keys, narrowed to them.
    ///
    /// As stored values (an empty list observes nothing): what `@Pref` sees. Users observe typed
    /// values (``observe(_:initial:handler:)``) or every stored change
    /// (``observeAllChanges(handler:)``).
    package func observeChanges(to keys: [Keys], handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        guard !keys.isEmpty else { return StoreObservation(onCancel: {}) }
        let names = Set(keys.map { StoreKey($0.watchedName) })
        return observeStoreAndLayer(keys: keys.map(\.watchedName), inEffect: true) { change in
            let relevant = change.values.filter { names.contains($0.key) }
            if !relevant.isEmpty { handler(StoreChange(values: relevant)) }
        }
    }

    /// Calls `handler` with every change applied to the store, as stored values, until the
    /// returned observation is cancelled or released: what ``allChanges()`` yields.
    ///
    /// ```swift
    /// let observation = prefs.observeAllChanges { change in print(change) }
    /// ```
    public func observeAllChanges(handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observeStoreAndLayer(keys: nil, inEffect: true, handler)
    }

    /// Every change applied to the store, as sets of changed keys and their new stored values,
    /// until the consuming task is cancelled: what ``observeAllChanges(handler:)`` delivers.
    ///
    /// ```swift
    /// for await change in prefs.allChanges() { print(change.values.keys.sorted()) }
    /// ```
    ///
    /// A consumer that falls behind gets the changes it missed merged into one (each key with its
    /// newest value), so the sequence never holds more than one change waiting.
    public func allChanges() -> AsyncStream<StoreChange> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            // The store and the administrator's layer deliver on queues of their own: one lock
            // keeps a change's two yields from interleaving with another's.
            let yielding = Locked(())
            let observation = observeAllChanges { change in
                yielding.withLock { _ in
                    if case .dropped(let unread) = continuation.yield(change) {
                        continuation.yield(unread.merged(with: change))
                    }
                }
            }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `handler` with each change of `keys` (every key: `nil`) in the store, and with each
    /// change of the administrator's layer when there is one (its file replaced): what `@Pref`,
    /// groups and ``observeChanges(to:handler:)`` see.
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
        let name = StoreKey(key.watchedName)
        return inOrder(
            observing: [key], now: { deliver(self[key]) },
            onChange: { [self] change in
                guard let stored = change.values[name] else { return }
                // Under an administrator's layer the value is not simply what was stored; a
                // secret's stamp names the value written with it.
                if key.isSecret { return deliver(secretValue(of: key, atStamp: stored.newValue)) }
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
        let observation = store.observe(watching: keys.map(\.watchedName), afterNow)
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

    /// Calls `deliver` with the keys' stored values at once (unless `initial` is `false`), then
    /// after each change touching any of them, in order (as ``observeValues(of:deliver:)`` does
    /// for one key).
    ///
    /// Each delivery holds the values as of that change, not what is stored by the time it is
    /// delivered (three quick writes are three deliveries of three different states). Under an
    /// administrator's layer the values in effect are not simply what was stored: `deliver` is
    /// given `nil`, and reads them.
    private func observeStored(
        of keys: [Keys], initial: Bool, deliver: @escaping @Sendable ([StoreKey: PropertyListValue?]?) -> Void
    ) -> StoreObservation {
        let names = Set(keys.map { StoreKey($0.watchedName) })
        let known = Locked<[StoreKey: PropertyListValue?]>([:])
        // Under a layer, or for a secret (its stamp is not its value), the values are read.
        let hasLayer = system != nil || keys.contains(where: \.isSecret)
        let now = {
            let stored = Dictionary(uniqueKeysWithValues: names.map { ($0, store.value(forKey: $0.name)) })
            known.withLock { $0 = stored }
            if initial { deliver(hasLayer ? nil : stored) }
        }
        return inOrder(observing: keys, now: now) { change in
            let touched = change.values.filter { names.contains($0.key) }
            guard !touched.isEmpty else { return }
            let stored = known.withLock { known in
                for (key, value) in touched { known[key] = value.newValue }
                return known
            }
            deliver(hasLayer ? nil : stored)
        }
    }
}

/// Reads several keys' values as one tuple.
///
/// A class holding the keys, so that a closure calling it captures an object: Swift 6.3 crashes
/// compiling a closure that captures a parameter pack itself.
private final class KeyPackReader<
    First: PreferenceValue, Second: PreferenceValue, each Other: PreferenceValue
>:
    Sendable
{
    let preferences: Preferences
    let first: Preferences.Key<First>
    let second: Preferences.Key<Second>
    let other: (repeat Preferences.Key<each Other>)

    init(
        _ preferences: Preferences, _ first: Preferences.Key<First>, _ second: Preferences.Key<Second>,
        _ other: repeat Preferences.Key<each Other>
    ) {
        self.preferences = preferences
        self.first = first
        self.second = second
        self.other = (repeat each other)
    }

    /// The keys, in order.
    var keys: [Preferences.Keys] {
        var keys: [Preferences.Keys] = [first, second]
        for key in repeat each other { keys.append(key) }
        return keys
    }

    /// The keys' values as `stored` holds them (`nil`: as they are now).
    func read(_ stored: [StoreKey: PropertyListValue?]?) -> (First, Second, repeat each Other) {
        (
            value(of: first, in: stored), value(of: second, in: stored),
            repeat value(of: each other, in: stored)
        )
    }

    /// The values of the keys after the first two, so too.
    func readOther(_ stored: [StoreKey: PropertyListValue?]?) -> (repeat each Other) {
        (repeat value(of: each other, in: stored))
    }

    func value<Value>(of key: Preferences.Key<Value>, in stored: [StoreKey: PropertyListValue?]?) -> Value {
        guard let stored else { return preferences[key] }
        return preferences.decode(stored[StoreKey(key.name)] ?? nil, for: key)
    }
}

/// Calls a handler with several keys' values as its arguments (an object for the closure that
/// delivers to capture, as ``KeyPackReader`` is).
private final class KeyPackDeliverer<
    First: PreferenceValue, Second: PreferenceValue, each Other: PreferenceValue
>:
    Sendable
{
    let reader: KeyPackReader<First, Second, repeat each Other>
    let handler: @Sendable (First, Second, repeat each Other) -> Void

    init(
        reader: KeyPackReader<First, Second, repeat each Other>,
        handler: @escaping @Sendable (First, Second, repeat each Other) -> Void
    ) {
        self.reader = reader
        self.handler = handler
    }

    func deliver(_ stored: [StoreKey: PropertyListValue?]?) {
        let other = reader.readOther(stored)
        handler(
            reader.value(of: reader.first, in: stored), reader.value(of: reader.second, in: stored),
            repeat each other)
    }
}
