import Foundation

extension Preferences {
    /// The form a key's value takes in the store, when it must match what the code it replaces
    /// wrote (so that both versions of an app read each other's writes).
    ///
    /// The forms a type does not have do not compile: `.jsonText` needs a `Codable` value.
    ///
    /// ```swift
    /// // @AppStorage("languages") var languages: [String] (through `extension Array: RawRepresentable`)
    /// let languages = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
    /// // Defaults 5+: Defaults.Key<[Bookmark]>("recent", default: [])
    /// struct Bookmark: Codable, PreferenceValue { var title: String }
    /// let recent = Preferences.Key<[Bookmark]>("recent", default: [], storedAs: .jsonTextPerElement)
    /// ```
    public struct StoredForm<Value: PreferenceValue>: Sendable {
        let coding: KeyCoding<Value>?
        /// Whether the value lives in the system's secret store rather than in the store.
        let isSecret: Bool

        init(coding: KeyCoding<Value>?, isSecret: Bool = false) {
            self.coding = coding
            self.isSecret = isSecret
        }

        /// The type's own property-list form (the default): readable by `prefs read`, `defaults`
        /// and plain `UserDefaults`.
        ///
        /// ```swift
        /// let volume = Preferences.Key<Double>("volume", default: 0.5, storedAs: .propertyList)
        /// ```
        public static var propertyList: Self { Self(coding: nil) }

        /// In the system's secret store, never in a file Prefs writes: the Keychain on Apple
        /// platforms, the Secret Service (GNOME Keyring, KWallet) on Linux, as the handle's
        /// ``SecretStore`` says.
        ///
        /// Read, written, reset and observed like any other key, through the same handle. The
        /// store holds only a stamp beside it (`prefs.secret:` and the name), which tells every
        /// process that the secret changed: a read is answered in the process until then. A
        /// read that cannot reach the secret store gives the default and reports why to the
        /// diagnostics (``Preferences/value(for:)`` throws it); a write throws it. A secret key
        /// is not written inside ``Preferences/update(_:)``, which is one store's transaction.
        ///
        /// ```swift
        /// extension Preferences.Keys {
        ///     static let apiToken = Key<String?>("apiToken", storedAs: .secret)
        /// }
        /// prefs[.apiToken] = "s3cr3t"
        /// ```
        public static var secret: Self { Self(coding: nil, isSecret: true) }
    }

    /// How a key reads a stored value of another type than its own.
    ///
    /// `.likeUserDefaults` needs a type `UserDefaults` converts to (``UserDefaultsReadable``).
    ///
    /// ```swift
    /// // `defaults write com.example.app debugMenu -string YES` was honoured by bool(forKey:)
    /// let debugMenu = Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)
    /// ```
    public struct ReadingRule<Value: PreferenceValue>: Sendable {
        let coding: KeyCoding<Value>?

        /// Only the type's own stored form; anything else reads as the default, reported to the
        /// diagnostics (the default).
        ///
        /// ```swift
        /// let launches = Preferences.Key<Int>("launches", default: 0, reading: .strict)
        /// ```
        public static var strict: Self { Self(coding: nil) }
    }
}

extension Preferences.StoredForm where Value: Codable {
    /// One string holding the value as JSON, written with `JSONEncoder`.
    ///
    /// How sindresorhus/Defaults before version 5 stores `Codable` values (and whole `[Codable]`
    /// arrays), and how `@AppStorage` stores a collection made `RawRepresentable` through the
    /// common `JSONEncoder` extension. Reads take either form.
    ///
    /// ```swift
    /// let languages = Preferences.Key<[String]>("languages", default: [], storedAs: .jsonText)
    /// ```
    public static var jsonText: Self { Self(coding: .jsonText()) }

    /// A collection with each element as its own string of JSON: an array or a set as an
    /// array of JSON strings, a dictionary as a dictionary of JSON strings.
    ///
    /// Exactly what sindresorhus/Defaults 5 and later write for collections of `Codable` values
    /// (its `ArrayBridge`, `SetBridge` and `DictionaryBridge` over its `CodableBridge`), so an app
    /// rolled back to its Defaults release reads the new writes. Reads take this form, one JSON
    /// text, or the property-list form. A value that is not a collection is one JSON text (as
    /// Defaults writes it).
    ///
    /// ```swift
    /// struct Bookmark: Codable, PreferenceValue { var title: String }
    /// let recent = Preferences.Key<[Bookmark]>("recent", default: [], storedAs: .jsonTextPerElement)
    /// ```
    public static var jsonTextPerElement: Self {
        let collection = Value.self as? any PerElementJSONCollection.Type
        return Self(coding: collection?.perElementCoding() as? KeyCoding<Value> ?? .jsonText())
    }
}

extension Preferences.ReadingRule where Value: UserDefaultsReadable {
    /// `UserDefaults`' own conversions, as `bool(forKey:)`, `integer(forKey:)`,
    /// `double(forKey:)`, `float(forKey:)`, `string(forKey:)` and `url(forKey:)` make them (see
    /// ``UserDefaultsReadable``); writes store the key's own type.
    ///
    /// ```swift
    /// let nickname = Preferences.Key<String?>("nickname", reading: .likeUserDefaults)
    /// ```
    public static var likeUserDefaults: Self { Self(coding: .likeUserDefaults()) }
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
                        type: swiftSpelling(of: Value.self), reason: "as JSON: \(error)")
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

    /// A stored form and a reading rule together: the form's writes; reads in the form first,
    /// then as the rule converts (a value older code stored as `UserDefaults` reads it).
    static func combining(_ form: KeyCoding?, _ rule: KeyCoding?) -> KeyCoding? {
        guard let form, let rule else { return form ?? rule }
        return KeyCoding(
            read: { stored in
                do { return try form.read(stored) } catch { return try rule.read(stored) }
            },
            write: form.write)
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
protocol PerElementJSONCollection {
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

/// An optional collection: absent, the key is removed (as in every form); present, the
/// collection's own form (Defaults' `OptionalBridge` does the same).
extension Optional: PerElementJSONCollection
where Wrapped: PerElementJSONCollection & Codable & PreferenceValue {
    static func perElementCoding() -> Any {
        guard let inner = Wrapped.perElementCoding() as? KeyCoding<Wrapped>, let write = inner.write else {
            return KeyCoding<Self>.jsonText()
        }
        return KeyCoding<Self>(
            read: { stored in try inner.read(stored) }, write: { value in try value.flatMap(write) })
    }
}
