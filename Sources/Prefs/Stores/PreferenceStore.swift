import Foundation
import PrefsEngine
import PrefsSupport

/// The one protocol a store implements: read, write and list values, run a transaction, and
/// publish changes.
///
/// Stores speak ``PropertyListValue`` only; typing and defaults live in ``Preferences``.
///
/// ```swift
/// let store: any PreferenceStore = MemoryStore()
/// try store.setValue(.integer(3), forKey: "count")
/// store.value(forKey: "count")  // .integer(3)
/// ```
///
/// Rules an implementation keeps:
/// - `value(forKey:)` never throws and never blocks for long: a store that cannot read answers
///   from what it last knew.
/// - A write either happens completely or throws and leaves the stored value as it was.
/// - `transaction` is atomic: no other writer's change lands between its reads and its writes,
///   and a body that throws changes nothing.
/// - Every applied change is published once to ``observe(_:)`` handlers, in commit order, never
///   while a lock is held that a handler's own read or write would need (``StoreObservers`` does
///   this for you).
/// - The store is safe to use from any thread.
public protocol PreferenceStore: AnyObject, Sendable, CustomStringConvertible {
    /// The stored value, or `nil` when nothing is stored under `key`.
    ///
    /// ```swift
    /// store.value(forKey: "volume")  // .double(0.5)
    /// ```
    func value(forKey key: String) -> PropertyListValue?

    /// Stores `value` under `key`, or removes the key when `value` is `nil`.
    ///
    /// ```swift
    /// try store.setValue(.string("Zhuo"), forKey: "name")
    /// try store.setValue(nil, forKey: "name")  // removed
    /// ```
    func setValue(_ value: PropertyListValue?, forKey key: String) throws

    /// Every stored key and its value, at one moment.
    ///
    /// ```swift
    /// store.snapshot()  // ["name": .string("Zhuo")]
    /// ```
    ///
    /// Keyed by ``StoreKey``, so keys that differ only in Unicode normalization stay apart.
    func snapshot() -> [StoreKey: PropertyListValue]

    /// Runs `body` as one atomic read-modify-write; its writes are applied together when it returns.
    ///
    /// ```swift
    /// try store.transaction { t in
    ///     let count = t["count"].flatMap { try? Int.deserialize($0) } ?? 0
    ///     t["count"] = .integer(Int64(count + 1))
    /// }
    /// ```
    func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result

    /// Calls `handler` with every change applied to the store, until the returned observation is
    /// cancelled or released.
    ///
    /// ```swift
    /// let observation = store.observe { change in print(change.values.keys) }
    /// ```
    func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation
}

extension PreferenceStore {
    /// Writes one value through a transaction; stores override it when they have a faster path.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        try transaction { $0[key] = value }
    }
}

/// What Prefs's own stores do beyond the public protocol.
///
/// They list keys cheaply, watch chosen keys and keep key descriptions, and each refuses a
/// value nested deeper than ``PropertyListValue/maximumNestingDepth`` as it writes (with
/// ``PreferenceError/Kind-swift.struct/nestedTooDeeply``), so ``Preferences`` leaves that check to them.
/// Package API, so the
/// public protocol stays the few calls any store needs; ``PreferenceStore``'s methods of the
/// same names answer for every store, from these where a store has them.
package protocol PrefsOwnStore: PreferenceStore {
    /// Every stored key, in no particular order.
    func keys() -> [String]

    /// Calls `handler` with every change, as ``PreferenceStore/observe(_:)`` does, and tells the
    /// store the keys the caller cares about, for a store that can watch outside writers only
    /// key by key (`UserDefaultsStore` on Apple platforms, by key-value observing, which reports
    /// other processes' writes). The handler may still hear of other keys; callers filter.
    func observe(keys: [String], _ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation

    /// The key descriptions programs published to this store (``Preferences/publish(_:)``), by
    /// key name, in their stored form; kept beside the values, never among them.
    func keyDescriptions() -> [String: PropertyListValue]

    /// Keeps these key descriptions, each replacing the one kept for its key before.
    func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws

    /// The value stored for `key`: ``PreferenceStore/value(forKey:)`` without what the store
    /// merely has registered (`UserDefaults`' registered defaults).
    func storedValue(forKey key: String) -> PropertyListValue?

    /// The domain secret keys on this store are kept under in the system's secret store
    /// (``SecretStore``), when the store has one.
    var domainForSecrets: String? { get }

    /// Erases from the store's files the bytes of values no longer stored (a value moved into
    /// the secret store): nothing for a store that keeps no old bytes.
    func eraseRemovedValues() throws
}

extension PrefsOwnStore {
    /// The keys of a snapshot, for a store that has no cheaper list.
    package func keys() -> [String] { snapshot().keys.map(\.name) }

    /// Every change, whatever the keys: most stores see every writer of the keys they hold.
    package func observe(keys: [String], _ handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        observe(handler)
    }

    /// What `value(forKey:)` reads: a store that registers no defaults.
    package func storedValue(forKey key: String) -> PropertyListValue? { value(forKey: key) }

    /// No domain: the program's stands in.
    package var domainForSecrets: String? { nil }

    /// Nothing: a store whose files keep no removed value (or that has none).
    package func eraseRemovedValues() throws {}

    /// No descriptions: a store that keeps none.
    package func keyDescriptions() -> [String: PropertyListValue] { [:] }

    /// Throws: a store that keeps no descriptions says so rather than drop them.
    package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
        throw keepsNoDescriptions(descriptions, store: "\(Self.self)")
    }
}

/// A store that answers a typed read in its own words.
///
/// A `SQLiteStore` gives a read slot's, from which ``Preferences`` builds a `String`, `Int`,
/// `Double` or `Bool` without a ``PropertyListValue``. Every other store's typed reads start
/// from ``PreferenceStore/value(forKey:)``.
@usableFromInline
package protocol TypedReadStore: PreferenceStore {
    /// The value for `key` as the store holds it: a read slot's words, or the stored value.
    func lookUp(_ key: String) -> StoredRead

    /// The store that answers this one's typed reads, when another does (a `SyncedStore`'s
    /// local store): ``Preferences`` asks it directly, one call rather than two.
    var typedReadsAnsweredBy: (any TypedReadStore)? { get }
}

extension TypedReadStore {
    /// None: the store answers itself.
    @usableFromInline
    package var typedReadsAnsweredBy: (any TypedReadStore)? { nil }
}

extension PreferenceStore {
    /// Every stored key, in no particular order: the store's own list, or a snapshot's keys.
    ///
    /// ```swift
    /// store.allKeys()  // ["name"]
    /// ```
    package func allKeys() -> [String] {
        (self as? any PrefsOwnStore)?.keys() ?? snapshot().keys.map(\.name)
    }

    /// Every change, telling a store that watches key by key which keys to watch.
    package func observe(watching keys: [String], _ handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        (self as? any PrefsOwnStore)?.observe(keys: keys, handler) ?? observe(handler)
    }

    /// The value stored for `key`, not merely registered: `nil` for a default
    /// `UserDefaults.register(defaults:)` gives.
    ///
    /// ```swift
    /// store.storedValue(forKey: "volume")  // nil until something is stored
    /// ```
    package func storedValue(forKey key: String) -> PropertyListValue? {
        if let store = self as? any PrefsOwnStore { return store.storedValue(forKey: key) }
        return value(forKey: key)
    }

    /// The key descriptions published to the store; none for a store that keeps none.
    package func publishedKeyDescriptions() -> [String: PropertyListValue] {
        (self as? any PrefsOwnStore)?.keyDescriptions() ?? [:]
    }

    /// Keeps these key descriptions; throws for a store that keeps none, rather than drop them.
    package func keep(keyDescriptions descriptions: [String: PropertyListValue]) throws {
        guard let store = self as? any PrefsOwnStore else {
            throw keepsNoDescriptions(descriptions, store: "\(Self.self)")
        }
        try store.publishKeyDescriptions(descriptions)
    }
}

/// The error of a store asked to keep key descriptions it has no place for.
private func keepsNoDescriptions(_ descriptions: [String: PropertyListValue], store: String) -> StoreError {
    StoreError(
        kind: .other, store: store,
        message: "this store keeps no key descriptions (a store of Prefs' own does)",
        keys: descriptions.keys.sorted())
}
