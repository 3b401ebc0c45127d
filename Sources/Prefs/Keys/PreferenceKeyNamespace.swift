import Foundation
import PrefsSupport

/// A `String` enum whose cases are preference keys, stored as `TypeName.case`.
///
/// A key is a card you take to the bank: the type name on it keeps two enums' `name` cases apart.
/// Each call names the value's type (`store` takes it from the value), and the preferences it
/// reads or writes (`Preferences.standard` when none is given).
///
/// ```swift
/// enum Account: String, PreferenceKeyNamespace { case name, age }
/// Account.name.store("Zhuo")                  // stored under "Account.name"
/// Account.name.value(as: String.self)         // "Zhuo"
/// Account.age.value(as: Int.self, in: prefs)  // nil until stored
/// Account.name.remove()
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

    /// Stores any storable value under this case.
    ///
    /// A failure is reported to the preferences' diagnostics and leaves the stored value as it
    /// was. To remove the value, call ``remove(in:)``.
    ///
    /// ```swift
    /// Account.age.store(30)
    /// Account.name.store("Zhuo", in: prefs)
    /// ```
    public func store<Value: PreferenceValue>(_ value: Value, in preferences: Preferences = .standard) {
        preferences[Preferences.Key<Value>(name(in: preferences), default: value)] = value
    }

    /// `store(nil)` names no type to store: ``remove(in:)`` removes the value.
    ///
    /// ```swift
    /// Account.name.remove(in: prefs)  // not store(nil, in: prefs)
    /// ```
    @available(*, unavailable, message: "to remove the stored value, call remove(in:)")
    public func store(_ nothing: Never?, in preferences: Preferences = .standard) {}

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
        preferences[Preferences.Key<Value?>(name(in: preferences))]
    }

    /// Removes the stored value.
    ///
    /// ```swift
    /// Account.name.remove()
    /// ```
    public func remove(in preferences: Preferences = .standard) {
        preferences.reset(Preferences.Key<String?>(name(in: preferences)))
    }

    /// Whether a value is stored under this case.
    ///
    /// ```swift
    /// Account.name.hasValue()  // false until stored
    /// ```
    public func hasValue(in preferences: Preferences = .standard) -> Bool {
        preferences.hasValue(for: Preferences.Key<String?>(name(in: preferences)))
    }

    /// ``storedName``, after telling the diagnostics of a prefix that doubles the dot.
    ///
    /// Once per type: a ``keyPrefix`` ending in a dot doubles it, the namespace adds one (`"Account."` stores
    /// `Account..name`). Told, not changed: values stored so are still found where they are.
    private func name(in preferences: Preferences) -> String {
        let name = storedName
        guard let prefix = Self.keyPrefix, prefix.hasSuffix(".") else { return name }
        if KeyPrefixNotices.first("\(Self.self)") {
            preferences.diagnostics.report(
                PreferenceIssue(
                    key: name, store: preferences.store.description,
                    kind: .storeNotice(
                        "the keyPrefix \"\(prefix)\" of \(Self.self) ends with a dot, and a namespace adds one: its cases are stored as \"\(name)\"; write \"\(prefix.dropLast())\" for \"\(prefix)\(rawValue)\" (a value already stored so stays where it is)"
                    )))
        }
        return name
    }
}

/// The declarations whose key prefix was said to look wrong, each said once.
enum KeyPrefixNotices {
    private static let told = Locked<Set<String>>([])

    /// Whether `declaration` is told of now for the first time.
    static func first(_ declaration: String) -> Bool {
        told.withLock { $0.insert(declaration).inserted }
    }
}
