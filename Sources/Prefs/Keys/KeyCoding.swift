import Foundation

extension Preferences {
    /// The form a key's value takes in the store, when it must match what the code it replaces
    /// wrote (so that both versions of an app read each other's writes).
    ///
    /// ```swift
    /// // @AppStorage("languages") var languages: [String] (through `extension Array: RawRepresentable`)
    /// let languages = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
    /// // Defaults 5+: Defaults.Key<[Bookmark]>("recent", default: [])
    /// struct Bookmark: Codable, PreferenceValue { var title: String }
    /// let recent = Preferences.Key<[Bookmark]>("recent", default: [], storedAs: .jsonTextPerElement)
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
        /// A collection with each element as its own string of JSON: an array or a set as an
        /// array of JSON strings, a dictionary as a dictionary of JSON strings. Exactly what
        /// sindresorhus/Defaults 5 and later write for collections of `Codable` values (its
        /// `ArrayBridge`, `SetBridge` and `DictionaryBridge` over its `CodableBridge`), so an app
        /// rolled back to its Defaults release reads the new writes. Reads take this form, one
        /// JSON text, or the property-list form.
        case jsonTextPerElement
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
                    throw PreferenceError.notRepresentable(
                        type: "\(Value.self)", reason: "as JSON: \(error)")
                }
            })
    }

    /// Each element as its own JSON text, as Defaults 5+ writes collections.
    ///
    /// Writes that form; reads it, one JSON text, or the property-list form. `elements` lists a collection's elements and `rebuild` makes one again.
    static func jsonTextPerElement<Element: Codable & SendableMetatype>(
        elements: @escaping @Sendable (Value) -> [Element], rebuild: @escaping @Sendable ([Element]) -> Value
    ) -> KeyCoding where Value: Codable {
        KeyCoding(
            read: { stored in
                if case .array(let items) = stored {
                    let elements: [Element] = items.compactMap(elementLikeDefaults)
                    if elements.count == items.count { return rebuild(elements) }
                }
                if case .string = stored, let value = stored.decodedFromJSONText(Value.self) { return value }
                return try Value.deserialize(stored)
            },
            write: { value in
                .array(try elements(value).map { .string(try encodeLikeDefaults($0, type: Value.self)) })
            })
    }

    /// The same for a dictionary: a dictionary of JSON strings.
    static func jsonTextPerValue<Element: Codable & SendableMetatype>() -> KeyCoding
    where Value == [String: Element] {
        KeyCoding(
            read: { stored in
                if case .dictionary(let items) = stored {
                    let values: [String: Element] = items.compactMapValues(elementLikeDefaults)
                    if values.count == items.count { return values }
                }
                if case .string = stored, let value = stored.decodedFromJSONText(Value.self) { return value }
                return try Value.deserialize(stored)
            },
            write: { value in
                .dictionary(try value.mapValues { .string(try encodeLikeDefaults($0, type: Value.self)) })
            })
    }

    /// `UserDefaults`' conversion of what is stored (which includes the type's own form), or
    /// else what the type reads itself.
    static func likeUserDefaults() -> KeyCoding where Value: UserDefaultsReadable {
        // Every standard type of `UserDefaultsReadable` has the conversions; a type of the user's
        // (the protocol has no requirement) reads its own form alone.
        let loose = Value.self as? any LooseReading.Type
        return KeyCoding(
            read: { stored in
                // Unwrapped before the cast: a `nil` (no conversion) cast to an optional `Value`
                // would succeed, as `.some(nil)`, and hide the type's own reading.
                if let loose, let converted = loose.readLikeUserDefaults(stored),
                    let value = converted as? Value
                {
                    return value
                }
                return try Value.deserialize(stored)  // what else the type reads (JSON text), or why not
            },
            write: nil)
    }
}

/// The collections whose `.jsonTextPerElement` form is one JSON string per element.
private protocol PerElementJSONCollection {
    /// The key coding of that form (a `KeyCoding<Self>`).
    static func perElementCoding() -> Any
}

extension Array: PerElementJSONCollection where Element: Codable & PreferenceValue & SendableMetatype {
    static func perElementCoding() -> Any {
        KeyCoding<Self>.jsonTextPerElement(elements: { $0 }, rebuild: { $0 })
    }
}

extension Set: PerElementJSONCollection where Element: Codable & PreferenceValue & SendableMetatype {
    static func perElementCoding() -> Any {
        KeyCoding<Self>.jsonTextPerElement(elements: { Array($0) }, rebuild: { Set($0) })
    }
}

extension Dictionary: PerElementJSONCollection
where Key == String, Value: Codable & PreferenceValue & SendableMetatype {
    static func perElementCoding() -> Any { KeyCoding<Self>.jsonTextPerValue() }
}

/// One value as Defaults' `CodableBridge` writes it: JSON of a one-element array, its brackets
/// dropped (so a string or a number, which `JSONEncoder` once refused at the top, is written too).
private func encodeLikeDefaults<Element: Encodable, Whole>(_ element: Element, type: Whole.Type) throws
    -> String
{
    do {
        let text = String(decoding: try JSONEncoder().encode([element]), as: UTF8.self)
        return String(text.dropFirst().dropLast())
    } catch {
        throw PreferenceError.notRepresentable(type: "\(Whole.self)", reason: "as JSON: \(error)")
    }
}

/// One stored element of a per-element collection: a string of JSON text, decoded; `nil` for
/// anything else.
private func elementLikeDefaults<Element: Decodable>(_ item: PropertyListValue) -> Element? {
    guard case .string(let text) = item else { return nil }
    return decodeLikeDefaults(text)
}

/// One value from what ``encodeLikeDefaults(_:type:)`` writes (as Defaults reads it back).
private func decodeLikeDefaults<Element: Decodable>(_ text: String) -> Element? {
    (try? JSONDecoder().decode([Element].self, from: Data("[\(text)]".utf8)))?.first
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
        self.init(name, default: defaultValue, coding: Self.coding(form))
    }

    /// The coding of `form` for this key's type: per element for an array, a set or a dictionary
    /// of `Codable` values; one JSON text otherwise (a value that is not a collection is its one
    /// element, and Defaults writes it so).
    private static func coding(_ form: Preferences.StoredForm) -> KeyCoding<Value>? where Value: Codable {
        switch form {
        case .propertyList: return nil
        case .jsonText: return .jsonText()
        case .jsonTextPerElement:
            let collection = Value.self as? any PerElementJSONCollection.Type
            return collection?.perElementCoding() as? KeyCoding<Value> ?? .jsonText()
        }
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
        self.init(name, default: nil, coding: Self.optionalCoding(form))
    }

    /// The same for an optional: an absent value removes the key in every form, and a present
    /// one is written as the wrapped type's form (Defaults' `OptionalBridge` does the same).
    private static func optionalCoding<Wrapped: Codable>(_ form: Preferences.StoredForm) -> KeyCoding<Value>?
    where Value == Wrapped? {
        guard form == .jsonTextPerElement,
            let collection = Wrapped.self as? any PerElementJSONCollection.Type,
            let inner = collection.perElementCoding() as? KeyCoding<Wrapped>, let write = inner.write
        else { return form == .propertyList ? nil : .jsonText() }
        return KeyCoding(
            read: { stored in try inner.read(stored) },
            write: { value in try value.flatMap(write) })
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
