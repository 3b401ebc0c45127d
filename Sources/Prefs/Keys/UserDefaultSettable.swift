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
    /// The article's `store(value:)`: ``PreferenceKeyNamespace/store(_:in:)``, in
    /// `Preferences.standard` unless given other preferences.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.store(value: "name")
    /// UserDefaults.TestData.name.store(value: "name", in: prefs)
    /// ```
    public func store<Value: PreferenceValue>(value: Value, in preferences: Preferences = .standard) {
        store(value, in: preferences)
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
