import Foundation

// Compatibility with the article Prefs grew from ("enum-case keys for UserDefaults"): its sample
// compiles unchanged on Prefs, storing under `TestData.name` as the article says. These are thin
// names over `PreferenceKeyNamespace`, not a second API; new code uses that protocol directly.

/// The article's name for ``PreferenceKeyNamespace``.
///
/// ```swift
/// extension UserDefaults {
///     enum TestData: String, UserDefaultSettable { case name }
/// }
/// UserDefaults.TestData.name.store(value: "name")
/// let stored = UserDefaults.TestData.name.storedString  // "name"
/// ```
public typealias UserDefaultSettable = PreferenceKeyNamespace

extension PreferenceKeyNamespace {
    /// The article's name for ``storedName``: `TypeName.case`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.uniqueKey  // "TestData.name"
    /// ```
    public var uniqueKey: String { storedName }

    /// The article's `store(value:)`: ``store(_:in:)`` in `Preferences.standard`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.store(value: "name")
    /// ```
    public func store<Value: PreferenceValue>(value: Value) {
        store(value)
    }

    /// The article's `storedValue`: the stored value as a Foundation object (`String`, `NSNumber`,
    /// `Date`, `Data`, arrays and dictionaries of them), or `nil`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.storedValue as? String  // "name"
    /// ```
    public var storedValue: Any? {
        Preferences.standard.store.value(forKey: storedName)?.foundationObject
    }

    /// The article's `storedString`: ``string``.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.storedString  // "name", or nil
    /// ```
    public var storedString: String? { string }

    /// The article's `storedBool`: the stored Boolean, `false` when none is stored (as
    /// `UserDefaults.bool(forKey:)`).
    ///
    /// ```swift
    /// UserDefaults.TestData.name.storedBool  // false
    /// ```
    public var storedBool: Bool { bool ?? false }
}
