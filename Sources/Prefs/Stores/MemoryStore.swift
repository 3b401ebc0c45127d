import PrefsEngine
import PrefsSupport

/// A store that keeps values in memory only: for tests, previews and values that should not
/// outlive the process.
///
/// ```swift
/// let prefs = Preferences(store: MemoryStore())
/// prefs[.volume] = 0.8
/// ```
public final class MemoryStore: PreferenceStore {
    private let values: Locked<[StoreKey: PropertyListValue]>
    private let descriptions = Locked<[String: PropertyListValue]>([:])
    /// Held while a write or a transaction's body runs; reads do not wait for it.
    private let writing: TransactionLock<Void>
    let observers = StoreObservers(label: "MemoryStore")

    /// Creates a store holding `initialValues`.
    ///
    /// `lockTimeout` bounds how long a write waits for another thread's transaction (a ``StoreError`` of kind
    /// `.busy` when it runs out).
    ///
    /// ```swift
    /// let store = MemoryStore(["volume": .double(0.5)])
    /// ```
    public init(_ initialValues: [StoreKey: PropertyListValue] = [:], lockTimeout: Duration = .seconds(10)) {
        values = Locked(initialValues)
        writing = TransactionLock((), store: "MemoryStore", timeout: lockTimeout)
    }

    /// `MemoryStore`.
    public var description: String { "MemoryStore" }

    /// The number of live observations of this store.
    package var observerCount: Int { observers.count }

    /// The stored value, or `nil`.
    public func value(forKey key: String) -> PropertyListValue? {
        values.withLock { $0[StoreKey(key)] }
    }

    /// Stores or removes one value.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        try value?.checkStorable(key: key, store: description)
        try writing.withLock(during: "a write") { _ in
            values.withLock { values in
                values[StoreKey(key)] = value
                observers.publish(StoreChange(values: [StoreKey(key): ValueChange(value)]))
            }
        }
    }

    /// The key descriptions published to this store.
    package func keyDescriptions() -> [String: PropertyListValue] {
        descriptions.withLock { $0 }
    }

    /// Keeps key descriptions beside the values.
    package func publishKeyDescriptions(_ published: [String: PropertyListValue]) throws {
        descriptions.withLock { $0.merge(published) { _, new in new } }
    }

    /// Every stored key and value.
    public func snapshot() -> [StoreKey: PropertyListValue] {
        values.withLock { $0 }
    }

    /// Runs `body` while no other write can happen and applies its writes together.
    ///
    /// Reads from the transaction go key by key to the store, so no copy of the whole store is
    /// made per transaction; nobody else can write until it ends.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try writing.withLock(during: "a transaction") { _ in try run(body) }
    }

    /// The same in the system's background time: the wait for another thread's transaction
    /// ends, throwing `.expired`, as soon as the system asks for the time back.
    package func transaction<Result>(
        expiry: ExpiringActivity.Expiry, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> Result {
        let expired = { expiry.isExpired }
        return try writing.withLock(during: "a transaction", givingUpWhen: expired) { _ in try run(body) }
    }

    /// Runs a transaction's body and applies its writes, holding the write lock.
    private func run<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        var transaction = StoreTransaction(reading: values)
        let result = try body(&transaction)
        let writes = transaction.writes
        try PropertyListValue.checkStorable(writes, store: description)
        values.withLock { values in
            for (key, change) in writes { values[key] = change.newValue }
            observers.publish(StoreChange(values: writes))
        }
        return result
    }

    /// Calls `handler` with every change until the observation ends.
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observers.add(handler)
    }
}

extension MemoryStore: PrefsOwnStore {}
