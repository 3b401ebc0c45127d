import Foundation

// Calls of releases before 1.0 that are gone or renamed: each fails to compile with a message
// naming the call to write instead (unavailable declarations are not part of the public API).

extension Preferences {
    /// Renamed ``allChanges()``.
    @available(*, unavailable, renamed: "allChanges()")
    public func changes() -> AsyncStream<StoreChange> { allChanges() }

    /// Every change of the store: ``observeAllChanges(handler:)``.
    @available(
        *, unavailable,
        message:
            "name the keys, observe(.a, .b) { a, b in … }, or observe every key with observeAllChanges(handler:)"
    )
    public func observeChanges(handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observeAllChanges(handler: handler)
    }

    /// Stored changes of some keys: their values, or every change.
    @available(
        *, unavailable,
        message:
            "observe(.a, .b) { a, b in … } gives the keys' values; observeAllChanges(handler:) every stored change (filter change.values by key)"
    )
    public func observeChanges(
        to first: Keys, _ more: Keys..., handler: @escaping @Sendable (StoreChange) -> Void
    ) -> StoreObservation { observeChanges(to: [first] + more, handler: handler) }

    /// Zero keys reset nothing: ``removeAll()`` removes every value.
    @available(
        *, unavailable,
        message: "name the keys to reset, reset(.a, .b), or remove every value with removeAll()"
    )
    public func reset() {}

    /// Observation takes `initial:` now.
    @available(
        *, unavailable,
        message:
            "observe(.key) { value in … } gives the current value first (initial: false starts with the next change), and the value itself, not a change"
    )
    public func observe<Value>(
        _ key: Key<Value>, options: ObservationOptions, handler: @escaping @Sendable (Value) -> Void
    ) -> StoreObservation { observe(key, handler: handler) }
}

/// Observation options are `initial:` now.
@available(*, unavailable, message: "observation takes initial: true (the default) or initial: false")
public struct ObservationOptions: OptionSet, Sendable {
    /// The options' bits.
    public let rawValue: Int
    /// Creates options from their raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `initial: true`, the default now.
    public static let initial = ObservationOptions(rawValue: 1)
}

extension Preferences.Key where Value: Comparable {
    /// A range of allowed values is `.range(…)` now.
    @available(*, unavailable, message: "write allowed: .range(lower...upper)")
    public convenience init(
        _ name: String, default defaultValue: Value, help: String? = nil, allowed: ClosedRange<Value>
    ) {
        self.init(name, default: defaultValue, help: help, allowed: .range(allowed))
    }
}

extension PreferenceKeyNamespace {
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: String.self), in any preferences (in:)")
    public var string: String? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Int.self), in any preferences (in:)")
    public var int: Int? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Double.self), in any preferences (in:)")
    public var double: Double? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Bool.self), in any preferences (in:)")
    public var bool: Bool? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Date.self), in any preferences (in:)")
    public var date: Date? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Data.self), in any preferences (in:)")
    public var data: Data? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: URL.self), in any preferences (in:)")
    public var url: URL? { nil }
    /// Renamed ``storedName``.
    @available(*, unavailable, renamed: "storedName")
    public var uniqueKey: String { storedName }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as:), which gives the type you name")
    public var storedValue: Any? { nil }
    /// Read with ``value(as:in:)``.
    @available(*, unavailable, message: "read with value(as: Bool.self) ?? false")
    public var storedBool: Bool { false }
}

extension SQLiteStore.Options {
    /// Renamed ``lockTimeout``, the name `MemoryStore` uses.
    @available(*, unavailable, renamed: "lockTimeout")
    public var busyTimeout: Duration {
        get { lockTimeout }
        // swift-format-ignore: NoSetterWithoutGetter
        set { lockTimeout = newValue }
    }

    /// `busyTimeout:` is `lockTimeout:` now.
    @available(*, unavailable, message: "the label is lockTimeout: now, as MemoryStore's")
    public init(
        durability: SQLiteStore.Durability = .committed, recreateOnCorruption: Bool = false,
        busyTimeout: Duration, refreshInterval: Duration = .seconds(10)
    ) {
        self.init(
            durability: durability, recreateOnCorruption: recreateOnCorruption, lockTimeout: busyTimeout,
            refreshInterval: refreshInterval)
    }
}

extension PreferenceIssue.Kind {
    /// Renamed: ``writeLost(_:)`` (a write that could not throw was lost), apart from
    /// `StoreError.Kind.writeFailed` (a store could not write).
    @available(*, unavailable, renamed: "writeLost")
    public static func writeFailed(_ error: any Error) -> Self { .writeLost(error) }
}

extension GroupMigrationReport {
    /// Gone: ``GroupMigrationReport/leftInPlace`` lists the properties, as `moved` does, and the
    /// diagnostics say which old key and value.
    @available(
        *, unavailable,
        message: "leftInPlace lists the properties; the diagnostics say which old key and value"
    )
    public struct Mismatch {}
}

extension SQLiteStore {
    /// Renamed ``copyValues(fromUserDefaultsDomain:using:)``: it copies, and leaves the domain.
    @available(*, unavailable, renamed: "copyValues(fromUserDefaultsDomain:using:)")
    public func moveIn(fromUserDefaultsDomain domain: String, using defaults: UserDefaults? = nil) throws
        -> CopyReport
    { try copyValues(fromUserDefaultsDomain: domain, using: defaults) }

    /// Renamed ``CopyReport``.
    @available(*, unavailable, renamed: "CopyReport")
    public typealias MoveInReport = CopyReport
}

extension SQLiteStore.CopyReport {
    /// Renamed ``alreadyCopied``.
    @available(*, unavailable, renamed: "alreadyCopied")
    public var alreadyMovedIn: Bool { alreadyCopied }
}

extension UserDefaultsStore {
    /// Renamed ``domain``, as every other type names a defaults domain.
    @available(*, unavailable, renamed: "domain")
    public var domainName: String? { domain }

    /// Renamed ``init(_:domain:synchronizesEachWrite:sizeLimit:)``.
    @available(*, unavailable, renamed: "init(_:domain:synchronizesEachWrite:sizeLimit:)")
    public convenience init(_ defaults: UserDefaults, domainName: String?) {
        self.init(defaults, domain: domainName)
    }
}

extension StoreError.Kind {
    /// Kinds are the static properties; a store of your own throws ``other`` with its message.
    @available(
        *, unavailable,
        message:
            "kinds are the static properties (.busy, .other …); a store of your own throws .other with its message"
    )
    public init(rawValue: String) { self.init(name: rawValue) }

    /// A kind's name is its ``description``.
    @available(*, unavailable, renamed: "description")
    public var rawValue: String { description }
}

extension PreferenceError.Kind {
    /// Kinds are the static properties.
    @available(*, unavailable, message: "kinds are the static properties (.typeMismatch, .notAllowed …)")
    public init(rawValue: String) { self.init(name: rawValue) }

    /// A kind's name is its ``description``.
    @available(*, unavailable, renamed: "description")
    public var rawValue: String { description }
}

extension StoreError {
    /// Renamed ``storeDescription``: a description, not the store.
    @available(*, unavailable, renamed: "storeDescription")
    public var store: String { storeDescription }
}

extension PreferenceError {
    /// Renamed ``storeDescription``: a description, not the store.
    @available(*, unavailable, renamed: "storeDescription")
    public var store: String? { storeDescription }
}

extension PreferenceIssue {
    /// Renamed ``storeDescription``: a description, not the store.
    @available(*, unavailable, renamed: "storeDescription")
    public var store: String { storeDescription }
}

extension PreferenceKeyNamespace {
    /// The article's `storedString` is on its own protocol, ``UserDefaultSettable``.
    @available(
        *, unavailable,
        message:
            "read with value(as: String.self, in:); storedString is the article's, on enums declared UserDefaultSettable"
    )
    public var storedString: String? { value(as: String.self) }
}

extension SQLiteStore.FileProtection {
    /// File protection classes are named by their cases, not by strings.
    @available(*, unavailable, message: "name the case (.complete …), or find one in FileProtection.allCases")
    public init?(rawValue: String) { nil }
}
