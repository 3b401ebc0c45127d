import Foundation

/// A value or a migration that failed: what kind of failure, and the key and store it concerns
/// when there is one.
///
/// The library's one error type besides ``StoreError``, and of the same shape: an open ``kind``
/// you compare with `==`, and a message. The rule between them: a value that cannot be stored (or
/// read, or migrated) is a `PreferenceError`; a store that cannot write throws its own error,
/// never wrapped in this one. A value's own `serialize`/`deserialize` throws it without a key;
/// ``Preferences`` adds the key and the store when the value was being written.
///
/// ```swift
/// do {
///     try prefs.set(UInt64.max, for: .counter)
/// } catch let error as PreferenceError where error.kind == .notRepresentable {
///     print(error)  // cannot store "counter" in MemoryStore: UInt64 cannot be stored: …
/// }
/// ```
public struct PreferenceError: Error, CustomStringConvertible, LocalizedError {
    /// The kind of failure: a fixed set of names, open to new ones, so a `switch` over them
    /// needs a `default` and a kind added in a later release breaks no code.
    ///
    /// ```swift
    /// PreferenceError.Kind(name: "locked") == .locked  // true
    /// ```
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static property is spelled (`"locked"`).
        ///
        /// An open set of names, not an `enum`: a kind a later release adds breaks no `switch`.
        package let name: String

        /// The kind called `name`.
        package init(name: String) { self.name = name }

        /// The kind's name.
        public var description: String { name }

        /// The stored value has another type than the one asked for.
        public static let typeMismatch = Kind(name: "typeMismatch")
        /// The value cannot be stored (out of range, not encodable, two keys spelled alike).
        public static let notRepresentable = Kind(name: "notRepresentable")
        /// A stored value of the right kind cannot be read as the type (no case has that raw value,
        /// a dictionary key does not parse, a range's bounds are reversed).
        public static let unreadable = Kind(name: "unreadable")
        /// The value is not one of those its key accepts (its `allowed:` values).
        public static let notAllowed = Kind(name: "notAllowed")
        /// Arrays and dictionaries nest deeper than a stored value may (256 levels).
        public static let nestedTooDeeply = Kind(name: "nestedTooDeeply")
        /// An administrator locked the key (``SystemLayer``): the file, or managed preferences.
        public static let locked = Kind(name: "locked")
        /// A migration stopped: its steps are out of order, a step threw (``underlying``; the
        /// steps before it are kept), or a group migration named a property the group lacks.
        public static let migrationFailed = Kind(name: "migrationFailed")
        /// Keys checked at start hold values the program cannot read (``message`` names each,
        /// what was found and where it comes from): thrown by `Preferences.validate(_:)`.
        public static let invalidSettings = Kind(name: "invalidSettings")
    }

    /// What kind of failure it is.
    public let kind: Kind
    /// What happened, in one line (without the key and store, which ``description`` adds).
    public let message: String
    /// The key that was being written, when there is one.
    public internal(set) var key: String?
    /// A description of the store, such as `MemoryStore` or `UserDefaults(suite: group.example)`,
    /// when the failure concerns one.
    public internal(set) var storeDescription: String?
    /// The error behind this one: the migration step's, or the value's own coding error.
    public let underlying: (any Error)?
    /// Whether a read raised it (a strict read, a check of the keys), so it says "reading",
    /// not "cannot store".
    package var raisedByRead = false

    /// An error of `kind` saying `message`; a value's `deserialize` throws one when the stored
    /// value does not fit.
    ///
    /// ```swift
    /// let stored = PropertyListValue.string("red")
    /// throw PreferenceError(.typeMismatch, "expected RGB, found \(stored)")
    /// ```
    public init(_ kind: Kind, _ message: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// A one-line explanation naming the key, the store and the cause.
    ///
    /// ```swift
    /// do { try prefs.set("blue", for: .theme) } catch { print(error) }
    /// // cannot store "theme" in MemoryStore: an administrator locked it (/etc/app.plist)
    /// ```
    public var description: String {
        switch (key, storeDescription) {
        case (let key?, let store?) where raisedByRead: "reading \"\(key)\" in \(store): \(message)"
        case (let key?, let store?): "cannot store \"\(key)\" in \(store): \(message)"
        case (let key?, nil): "\"\(key)\": \(message)"
        case (nil, let store?): "\(store): \(message)"
        case (nil, nil): message
        }
    }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension PreferenceError {
    /// The stored value `found` is not a `expected`.
    @usableFromInline
    package static func typeMismatch(expected: String, found: PropertyListValue) -> PreferenceError {
        PreferenceError(.typeMismatch, "expected \(expected), found \(found)")
    }

    /// A value of `type` cannot be stored, because of `reason`.
    package static func notRepresentable(type: String, reason: String) -> PreferenceError {
        PreferenceError(.notRepresentable, "\(type) cannot be stored: \(reason)")
    }

    /// A stored value of the right kind cannot be read as `type`, because of `reason`.
    package static func unreadable(type: String, reason: String) -> PreferenceError {
        PreferenceError(.unreadable, "cannot be read as \(type): \(reason)")
    }

    /// `value` is not one of the values the key accepts (`allowed`).
    package static func notAllowed(value: String, allowed: String) -> PreferenceError {
        PreferenceError(.notAllowed, "\(value) is not one of the values the key accepts (\(allowed))")
    }

    /// Arrays and dictionaries nest deeper than `limit`.
    package static func nestedTooDeeply(limit: Int) -> PreferenceError {
        PreferenceError(
            .nestedTooDeeply,
            "arrays and dictionaries nest deeper than \(limit) levels, the most a stored value may have")
    }

    /// This error, naming the key and store it concerns.
    package func naming(key: String?, store: String) -> PreferenceError {
        var named = self
        named.key = key
        named.storeDescription = store
        return named
    }

    /// This error, naming the key and store of the read that raised it.
    package func naming(readOf key: String?, store: String) -> PreferenceError {
        var named = naming(key: key, store: store)
        named.raisedByRead = true
        return named
    }
}
