import Foundation

extension Preferences {
    /// The form a key's value takes in the store, when it must match what the code it replaces
    /// wrote (so that both versions of an app read each other's writes).
    ///
    /// ```swift
    /// // @AppStorage("languages") var languages: [String] (through `extension Array: RawRepresentable`)
    /// let languages = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
    /// ```
    public enum StoredForm: Sendable, Equatable {
        /// The type's own property-list form (the default): readable by `prefs read`, `defaults`
        /// and plain `UserDefaults`.
        case propertyList
        /// One string holding the value as JSON, written with `JSONEncoder`: how
        /// sindresorhus/Defaults before version 5 stores `Codable` values (and whole `[Codable]`
        /// arrays), and how `@AppStorage` stores a collection made `RawRepresentable` through the
        /// common `JSONEncoder` extension. Reads take either form.
        case jsonText
    }

    /// How a key reads a stored value of another type than its own.
    ///
    /// ```swift
    /// // `defaults write com.example.app debugMenu -string YES` was honoured by bool(forKey:)
    /// let debugMenu = Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)
    /// ```
    public enum ReadingRule: Sendable, Equatable {
        /// Only the type's own stored form; anything else reads as the default, reported to the
        /// diagnostics (the default).
        case strict
        /// `UserDefaults`' own conversions, as `bool(forKey:)`, `integer(forKey:)`,
        /// `double(forKey:)`, `float(forKey:)`, `string(forKey:)` and `url(forKey:)` make them
        /// (see ``UserDefaultsReadable``).
        case likeUserDefaults
    }
}

/// How one key reads and writes its stored value when that differs from its type's own form
/// (``Preferences/StoredForm``, ``Preferences/ReadingRule``).
@usableFromInline
struct KeyCoding<Value: PreferenceValue>: Sendable {
    @usableFromInline let read: @Sendable (PropertyListValue) throws -> Value
    let write: (@Sendable (Value) throws -> PropertyListValue?)?

    /// JSON text on write; JSON text or the property-list form on read.
    static func jsonText() -> KeyCoding where Value: Codable {
        KeyCoding(
            read: { stored in
                if case .string = stored, let value = stored.decodedFromJSONText(Value.self) { return value }
                return try Value.deserialize(stored)
            },
            write: { value in
                // A `nil` optional removes the key, as in every other form.
                guard try Value.serialize(value) != nil else { return nil }
                do {
                    return .string(String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
                } catch {
                    throw ValueCodingError.notRepresentable(
                        type: "\(Value.self)", reason: "as JSON: \(error)")
                }
            })
    }

    /// `UserDefaults`' conversion of what is stored (which includes the type's own form), or
    /// else what the type reads itself.
    static func likeUserDefaults() -> KeyCoding where Value: UserDefaultsReadable {
        KeyCoding(
            read: { stored in
                if let value = Value.readLikeUserDefaults(stored) { return value }
                return try Value.deserialize(stored)  // what else the type reads (JSON text), or why not
            },
            write: nil)
    }
}

extension Preferences.Key {
    /// Creates a key whose value is stored in the given form: `.jsonText` keeps the form the
    /// code it replaces wrote, on write as well as on read, so a rollback reads the new writes.
    ///
    /// ```swift
    /// struct Bookmark: Codable, PreferenceValue { var title: String }
    /// let recent = Preferences.Key<[Bookmark]>("recent", default: [], storedAs: .jsonText)
    /// ```
    public convenience init(
        _ name: String, default defaultValue: Value, storedAs form: Preferences.StoredForm
    )
    where Value: Codable {
        self.init(name, default: defaultValue, coding: form == .jsonText ? .jsonText() : nil)
    }

    /// Creates an optional key whose value is stored in the given form (see
    /// ``init(_:default:storedAs:)``).
    ///
    /// ```swift
    /// struct Profile: Codable, PreferenceValue { var name: String }
    /// let profile = Preferences.Key<Profile?>("profile", storedAs: .jsonText)
    /// ```
    public convenience init<Wrapped>(_ name: String, storedAs form: Preferences.StoredForm)
    where Value == Wrapped?, Wrapped: Codable {
        self.init(name, default: nil, coding: form == .jsonText ? .jsonText() : nil)
    }

    /// Creates a key that reads a stored value of another type as `UserDefaults` would, with
    /// `.likeUserDefaults` (a string `"YES"` as `true`, `"42"` as 42); writes store its own type.
    ///
    /// ```swift
    /// let debugMenu = Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)
    /// ```
    public convenience init(
        _ name: String, default defaultValue: Value, reading rule: Preferences.ReadingRule
    )
    where Value: UserDefaultsReadable {
        self.init(name, default: defaultValue, coding: rule == .likeUserDefaults ? .likeUserDefaults() : nil)
    }

    /// Creates an optional key that reads as `UserDefaults` would (see
    /// ``init(_:default:reading:)``).
    ///
    /// ```swift
    /// let nickname = Preferences.Key<String?>("nickname", reading: .likeUserDefaults)
    /// ```
    public convenience init<Wrapped>(_ name: String, reading rule: Preferences.ReadingRule)
    where Value == Wrapped?, Wrapped: UserDefaultsReadable {
        self.init(name, default: nil, coding: rule == .likeUserDefaults ? .likeUserDefaults() : nil)
    }
}
