import PrefsSupport

/// The working state of a ``PreferenceStore/transaction(_:)``: reads see the transaction's own
/// writes first, then the store.
///
/// ```swift
/// try store.transaction { t in
///     t["launches"] = .integer(1)
///     t["launches"]  // .integer(1), though not yet applied
/// }
/// ```
public struct StoreTransaction {
    private let readStored: (String) -> PropertyListValue?
    private let listStoredKeys: () -> [String]

    /// The writes made so far, each key set or removed, applied when the body returns.
    public private(set) var writes: [StoreKey: ValueChange] = [:]

    /// Creates a transaction over a store's state as its implementation reads it under its lock.
    ///
    /// ```swift
    /// let current: [String: PropertyListValue] = ["volume": .double(0.5)]
    /// var t = StoreTransaction(read: { current[$0] }, keys: { Array(current.keys) })
    /// ```
    public init(read: @escaping (String) -> PropertyListValue?, keys: @escaping () -> [String]) {
        self.readStored = read
        self.listStoredKeys = keys
    }

    /// A transaction over a cache of stored values, read key by key under its lock (no copy of the
    /// whole cache per transaction).
    ///
    /// <!-- swift: not compiled (package API: Locked is in PrefsSupport, which is not a product) -->
    /// ```swift
    /// let cache = Locked<[StoreKey: PropertyListValue]>([:])
    /// var t = StoreTransaction(reading: cache)
    /// ```
    package init(reading cache: Locked<[StoreKey: PropertyListValue]>) {
        self.init(
            read: { key in cache.withLock { $0[StoreKey(key)] } },
            keys: { cache.withLock { $0.keys.map(\.name) } })
    }

    /// The value under `key` as the transaction sees it; assigning `nil` removes the key.
    ///
    /// ```swift
    /// t["name"] = .string("Zhuo")
    /// ```
    public subscript(key: String) -> PropertyListValue? {
        get {
            if let written = writes[StoreKey(key)] { return written.newValue }
            return readStored(key)
        }
        set {
            writes[StoreKey(key)] = ValueChange(newValue)
        }
    }

    /// Every key the transaction sees as stored: the store's keys with this transaction's writes.
    ///
    /// ```swift
    /// for key in t.keys { t[key] = nil }  // remove everything
    /// ```
    public var keys: [String] {
        var result = Set(listStoredKeys().map { StoreKey($0) })
        for (key, change) in writes {
            if change == .removed { result.remove(key) } else { result.insert(key) }
        }
        return result.map(\.name)
    }
}
