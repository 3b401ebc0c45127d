import Foundation

/// A `String` enum whose cases are preference keys, stored as `TypeName.case`.
///
/// A key is a card you take to the bank: the type name on it keeps two enums' `name` cases apart.
///
/// ```swift
/// enum Account: String, PreferenceKeyNamespace { case name, age }
/// Account.name.store("Zhuo")           // stored under "Account.name"
/// Account.name.string                  // "Zhuo"
/// Account.age.value(as: Int.self)      // nil until stored
/// ```
///
/// Customise the stored names with ``keyPrefix``: another prefix, or `nil` for the bare case names.
public protocol PreferenceKeyNamespace: RawRepresentable, Sendable where RawValue == String {
    /// What goes before the case name and a dot; the type's name by default, `nil` for none.
    ///
    /// ```swift
    /// enum Legacy: String, PreferenceKeyNamespace {
    ///     case token
    ///     static var keyPrefix: String? { nil }  // stored as "token"
    /// }
    /// ```
    static var keyPrefix: String? { get }
}

extension PreferenceKeyNamespace {
    /// The type's own name, so `Account.name` is stored as `Account.name`.
    public static var keyPrefix: String? { String(describing: Self.self) }

    /// The name this case is stored under.
    ///
    /// ```swift
    /// Account.name.storedName  // "Account.name"
    /// ```
    public var storedName: String {
        Self.keyPrefix.map { "\($0).\(rawValue)" } ?? rawValue
    }

    /// A typed key for this case, with a default, to use anywhere a `Preferences.Key` is expected.
    ///
    /// ```swift
    /// enum Account: String, PreferenceKeyNamespace { case name, age }
    /// extension Preferences.Keys { static let accountAge = Account.age.key(default: 0) }
    /// prefs[.accountAge] += 1
    /// ```
    public func key<Value: PreferenceValue>(default defaultValue: Value) -> Preferences.Key<Value> {
        Preferences.Key(storedName, default: defaultValue)
    }

    /// Stores any storable value under this case (`nil` removes it).
    ///
    /// A failure is reported to the preferences' diagnostics and leaves the stored value as it was.
    ///
    /// ```swift
    /// Account.age.store(30)
    /// Account.name.store("Zhuo", in: prefs)
    /// ```
    public func store<Value: PreferenceValue>(_ value: Value, in preferences: Preferences = .standard) {
        preferences[Preferences.Key<Value>(storedName, default: value)] = value
    }

    /// The stored value as `Value`, or `nil` when nothing is stored or it is of another type (which
    /// is reported to the diagnostics).
    ///
    /// ```swift
    /// let age = Account.age.value(as: Int.self)
    /// ```
    public func value<Value: PreferenceValue>(
        as type: Value.Type = Value.self, in preferences: Preferences = .standard
    )
        -> Value?
    {
        preferences[Preferences.Key<Value?>(storedName)]
    }

    /// Removes the stored value.
    ///
    /// ```swift
    /// Account.name.remove()
    /// ```
    public func remove(in preferences: Preferences = .standard) {
        preferences.reset(Preferences.Key<String?>(storedName))
    }

    /// Whether a value is stored under this case.
    ///
    /// ```swift
    /// Account.name.hasValue()  // false until stored
    /// ```
    public func hasValue(in preferences: Preferences = .standard) -> Bool {
        preferences.hasValue(for: Preferences.Key<String?>(storedName))
    }

    /// The stored string in `Preferences.standard`, or `nil`.
    public var string: String? { value(as: String.self) }
    /// The stored integer in `Preferences.standard`, or `nil`.
    public var int: Int? { value(as: Int.self) }
    /// The stored real in `Preferences.standard`, or `nil`.
    public var double: Double? { value(as: Double.self) }
    /// The stored Boolean in `Preferences.standard`, or `nil`.
    public var bool: Bool? { value(as: Bool.self) }
    /// The stored date in `Preferences.standard`, or `nil`.
    public var date: Date? { value(as: Date.self) }
    /// The stored data in `Preferences.standard`, or `nil`.
    public var data: Data? { value(as: Data.self) }
    /// The stored URL in `Preferences.standard`, or `nil`.
    public var url: URL? { value(as: URL.self) }
    /// The stored array in `Preferences.standard`, or `nil`.
    public var array: [PropertyListValue]? { value(as: [PropertyListValue].self) }
    /// The stored dictionary in `Preferences.standard`, or `nil`.
    public var dictionary: [String: PropertyListValue]? { value(as: [String: PropertyListValue].self) }
}
