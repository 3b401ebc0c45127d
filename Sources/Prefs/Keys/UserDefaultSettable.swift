import Foundation

// Compatibility with the article Prefs grew from ("enum-case keys for UserDefaults"): its sample
// compiles unchanged on Prefs, storing under `TestData.name` as the article says. Two thin names
// over `PreferenceKeyNamespace`, on the article's own protocol only; new code uses that protocol.

/// The article's protocol: ``PreferenceKeyNamespace`` with the article's two calls.
///
/// ```swift
/// extension UserDefaults {
///     enum TestData: String, UserDefaultSettable { case name }
/// }
/// UserDefaults.TestData.name.store(value: "name")
/// let stored = UserDefaults.TestData.name.storedString  // "name"
/// ```
public protocol UserDefaultSettable: PreferenceKeyNamespace {}

extension UserDefaultSettable {
    /// The article's `store(value:)`: ``PreferenceKeyNamespace/store(_:in:)`` in
    /// `Preferences.standard`, as the article's `UserDefaults.standard`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.store(value: "name")
    /// ```
    public func store<Value: PreferenceValue>(value: Value) {
        store(value)
    }

    /// The article's calls use `Preferences.standard`: in other preferences, the general ones.
    @available(
        *, unavailable,
        message:
            "the article's calls use Preferences.standard; in other preferences, store(_:in:) and value(as:in:)"
    )
    public func store<Value: PreferenceValue>(value: Value, in preferences: Preferences) {
        store(value, in: preferences)
    }

    /// `store(value: nil)` names no type to store: ``remove(in:)`` removes the value.
    @available(*, unavailable, message: "to remove the stored value, call remove(in:)")
    public func store(value nothing: Never?, in preferences: Preferences = .standard) {}

    /// `storedString` reads `Preferences.standard`: in other preferences, `value(as:in:)`.
    @available(
        *, unavailable,
        message:
            "storedString reads Preferences.standard, as the article's UserDefaults.standard; in other preferences, value(as: String.self, in:)"
    )
    public func storedString(in preferences: Preferences) -> String? {
        value(as: String.self, in: preferences)
    }

    /// The article's `storedString`: the stored string in `Preferences.standard` (the user's own
    /// preferences, as the article's `UserDefaults.standard`), or `nil`; in other preferences,
    /// `value(as: String.self, in: prefs)`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.storedString  // "name", or nil
    /// ```
    public var storedString: String? { value(as: String.self) }
}
