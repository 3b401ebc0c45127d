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
    /// `Preferences.standard`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.store(value: "name")
    /// ```
    public func store<Value: PreferenceValue>(value: Value) {
        store(value)
    }

    /// The article's `storedString`: the stored string in `Preferences.standard`, or `nil`.
    ///
    /// ```swift
    /// UserDefaults.TestData.name.storedString  // "name", or nil
    /// ```
    public var storedString: String? { value(as: String.self) }
}
