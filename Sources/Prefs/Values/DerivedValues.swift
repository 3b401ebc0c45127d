import Foundation

// Types that conform to `PreferenceValue` by declaring it: the implementation is derived from
// `RawRepresentable` or `Codable`. A `String` enum is both; the raw value wins, so it is stored
// as a plain string that other programs can read.

extension PreferenceValue where Self: RawRepresentable, RawValue: PreferenceValue {

    /// Stores the raw value.
    ///
    /// ```swift
    /// enum Theme: String, PreferenceValue { case system, light, dark }
    /// try Theme.serialize(.dark)  // .string("dark")
    /// ```
    public static func serialize(_ value: Self) throws -> PropertyListValue? {
        try RawValue.serialize(value.rawValue)
    }

    /// Reads the raw value, and throws when no case has it.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        try fromRawValue(stored)
    }
}

extension PreferenceValue where Self: RawRepresentable & Codable, RawValue: PreferenceValue {

    /// Stores the raw value (preferred over `Codable` for types that are both).
    public static func serialize(_ value: Self) throws -> PropertyListValue? {
        try RawValue.serialize(value.rawValue)
    }

    /// Reads the raw value, and throws when no case has it.
    ///
    /// A string holding the value as JSON (`"30 Minutes"`, quotes included: how Defaults stores a
    /// `Codable` enum) is read too.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        do {
            return try fromRawValue(stored)
        } catch {
            if let value = stored.decodedFromJSONText(Self.self) { return value }
            throw error
        }
    }
}

extension PreferenceValue where Self: RawRepresentable, RawValue: PreferenceValue {
    fileprivate static func fromRawValue(_ stored: PropertyListValue) throws -> Self {
        let raw = try RawValue.deserialize(stored)
        guard let value = Self(rawValue: raw) else {
            throw PreferenceError.unreadable(
                type: "\(Self.self)", reason: "no case has the raw value \(raw)")
        }
        return value
    }
}

extension PreferenceValue where Self: Codable {
    /// Stores the value as the property list its `Encodable` conformance produces (usually a
    /// dictionary), so it stays readable with `prefs read` and plain `UserDefaults`.
    ///
    /// ```swift
    /// struct Profile: Codable, PreferenceValue { var name: String }
    /// try Profile.serialize(Profile(name: "Zhuo"))  // .dictionary(["name": .string("Zhuo")])
    /// ```
    public static func serialize(_ value: Self) throws -> PropertyListValue? {
        // Straight into the value model, not through plist bytes: faster, and no string is
        // mistaken for Foundation's `"$null"` marker.
        do {
            guard let encoded = try PropertyListValueEncoder().encode(value) else {
                throw PreferenceError.notRepresentable(
                    type: "\(Self.self)", reason: "encoding produced no value")
            }
            return encoded
        } catch let error as PreferenceError {
            throw error
        } catch {
            throw PreferenceError.notRepresentable(type: "\(Self.self)", reason: describe(error))
        }
    }

    /// Rebuilds the value with its `Decodable` conformance.
    ///
    /// A string holding the value as JSON (`{"isUnicorn":false}`: how Defaults stores `Codable`
    /// values) is read too, so data a Defaults user already has reads back without a migration;
    /// writing stores Prefs' own form.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        do {
            return try PropertyListValueDecoder().decode(Self.self, from: stored)
        } catch {
            if let value = stored.decodedFromJSONText(Self.self) { return value }
            throw PreferenceError.typeMismatch(expected: "\(Self.self) (\(describe(error)))", found: stored)
        }
    }
}

extension PropertyListValue {
    /// The value decoded from a string holding JSON text (an object, an array or a quoted
    /// string), as Defaults (sindresorhus/Defaults) stores `Codable` values; `nil` for anything
    /// else.
    ///
    /// ```swift
    /// struct Unicorn: Decodable { let isUnicorn: Bool }
    /// PropertyListValue.string(#"{"isUnicorn":false}"#).decodedFromJSONText(Unicorn.self)
    /// ```
    func decodedFromJSONText<Value: Decodable>(_ type: Value.Type) -> Value? {
        guard case .string(let text) = self, let first = text.utf8.first,
            first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"")
        else { return nil }
        return try? JSONDecoder().decode(Value.self, from: Data(text.utf8))
    }
}

extension PreferenceValue {
    /// A collection stored as one string of JSON text, starting with `opening` (`[` or `{`), as
    /// `@AppStorage` stores a collection made `RawRepresentable` through `JSONEncoder`, and
    /// Defaults before version 5 stores a whole `[Codable]`; `nil` for anything else.
    ///
    /// A `Decodable` collection is decoded as it was encoded (`JSONDecoder`: dates as numbers
    /// too); any other is read from the property list the JSON makes.
    ///
    /// ```swift
    /// [String].fromJSONText(.string(#"["fr","ja"]"#), opening: "[")  // ["fr", "ja"]
    /// ```
    static func fromJSONText(_ stored: PropertyListValue, opening: Unicode.Scalar) -> Self? {
        guard case .string(let text) = stored, text.unicodeScalars.first == opening else { return nil }
        let data = Data(text.utf8)
        if let decodable = Self.self as? any Decodable.Type, let value = decodedJSON(decodable, data) as? Self
        {
            return value
        }
        guard let object = try? JSONSerialization.jsonObject(with: data),
            let parsed = PropertyListValue(foundationObject: object)
        else { return nil }
        return try? deserialize(parsed)
    }
}

/// `data` decoded as JSON into `type`, or `nil`.
private func decodedJSON<Value: Decodable>(_ type: Value.Type, _ data: Data) -> Value? {
    try? JSONDecoder().decode(type, from: data)
}

/// The useful part of a `DecodingError` or `EncodingError`: which field and why, without the
/// type dump.
private func describe(_ error: any Error) -> String {
    let context: DecodingError.Context
    switch error {
    case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c),
        DecodingError.keyNotFound(_, let c), DecodingError.dataCorrupted(let c):
        context = c
    case EncodingError.invalidValue(_, let c):
        context = DecodingError.Context(codingPath: c.codingPath, debugDescription: c.debugDescription)
    default:
        return "\(error)"
    }
    let path = context.codingPath.map(\.stringValue).joined(separator: ".")
    return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
}
