/// A store that keeps values in memory only: for tests, previews and values that should not
/// outlive the process.
///
/// ```swift
/// let prefs = Preferences(store: MemoryStore())
/// prefs[.volume] = 0.8
/// ```
public final class MemoryStore: PreferenceStore {
    private let values: Locked<[String: PropertyListValue]>
    private let observers = StoreObservers(label: "MemoryStore")

    /// Creates a store holding `initialValues`.
    ///
    /// ```swift
    /// let store = MemoryStore(["volume": .double(0.5)])
    /// ```
    public init(_ initialValues: [String: PropertyListValue] = [:]) {
        values = Locked(initialValues)
    }

    /// `MemoryStore`.
    public var description: String { "MemoryStore" }

    /// The number of live observations of this store.
    public var observerCount: Int { observers.count }

    /// The stored value, or `nil`.
    public func value(forKey key: String) -> PropertyListValue? {
        values.withLock { $0[key] }
    }

    /// Stores or removes one value.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        try value?.checkNesting()
        values.withLock { values in
            values[key] = value
            observers.publish(StoreChange(values: [key: value]))
        }
    }

    /// Every stored key and value.
    public func snapshot() -> [String: PropertyListValue] {
        values.withLock { $0 }
    }

    /// Runs `body` under the store's lock and applies its writes together.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try values.withLock { values in
            // The transaction reads a copy-on-write view that is released before the writes are
            // applied, so applying them mutates in place instead of copying the whole store.
            let (writes, result) = try { [values] in
                var transaction = StoreTransaction(read: { values[$0] }, keys: { Array(values.keys) })
                let result = try body(&transaction)
                return (transaction.writes, result)
            }()
            try PropertyListValue.checkNesting(of: writes)
            for (key, value) in writes { values[key] = value }
            observers.publish(StoreChange(values: writes))
            return result
        }
    }

    /// Calls `handler` with every change until the observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observers.add(handler)
    }
}
