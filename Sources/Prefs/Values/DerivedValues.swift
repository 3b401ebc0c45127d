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
                type: swiftSpelling(of: Self.self), reason: "no case has the raw value \(raw)")
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
                    type: swiftSpelling(of: Self.self), reason: "encoding produced no value")
            }
            return encoded
        } catch let error as PreferenceError {
            throw error
        } catch {
            throw PreferenceError.notRepresentable(
                type: swiftSpelling(of: Self.self), reason: describe(error))
        }
    }

    /// Rebuilds the value with its `Decodable` conformance.
    ///
    /// JSON that older code stored is read too, so data a user already has reads back without a
    /// migration: a string holding the value as JSON (`{"isUnicorn":false}`: how Defaults stores
    /// `Codable` values), or data holding it (`UserDefaults.set(try JSONEncoder().encode(v),
    /// forKey:)`). Writing stores Prefs' own form; a read through a key reports the other form to
    /// the diagnostics.
    ///
    /// ```swift
    /// struct Profile: Codable, PreferenceValue { var name: String }
    /// try Profile.deserialize(.data(Data(#"{"name":"Zhuo"}"#.utf8)))  // Profile(name: "Zhuo")
    /// ```
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        do {
            return try PropertyListValueDecoder().decode(Self.self, from: stored)
        } catch {
            if let json = stored.olderJSON(opening: "{[\"") {
                do {
                    return try JSONDecoder().decode(Self.self, from: json)
                } catch let jsonError {
                    let form = if case .data = stored { "JSON data" } else { "JSON text" }
                    throw PreferenceError(
                        .typeMismatch,
                        "expected \(swiftSpelling(of: Self.self)), found \(form) that does not decode as one (\(whereJSON(jsonError)))"
                    )
                }
            }
            // One "expected … found …": the decoder's words only when they say something more.
            if case DecodingError.typeMismatch(_, let context) = error, context.codingPath.isEmpty {
                throw PreferenceError.typeMismatch(expected: swiftSpelling(of: Self.self), found: stored)
            }
            throw PreferenceError(.typeMismatch, "cannot read \(Self.self): \(describe(error))")
        }
    }
}

extension PropertyListValue {
    /// The value decoded from JSON as older code stored it — a string of JSON text (an object, an
    /// array or a quoted string), as Defaults (sindresorhus/Defaults) stores `Codable` values, or
    /// data holding JSON, as `UserDefaults.set(try JSONEncoder().encode(v), forKey:)` does; `nil`
    /// for anything else.
    ///
    /// ```swift
    /// struct Unicorn: Decodable { let isUnicorn: Bool }
    /// PropertyListValue.string(#"{"isUnicorn":false}"#).decodedFromJSONText(Unicorn.self)
    /// ```
    func decodedFromJSONText<Value: Decodable>(_ type: Value.Type) -> Value? {
        guard let json = olderJSON(opening: "{[\"") else { return nil }
        return try? JSONDecoder().decode(Value.self, from: json)
    }

    /// The JSON this value holds, when it is a string or data whose first character (after
    /// white space, for data) is one of `openings`; `nil` for anything else.
    func olderJSON(opening openings: String) -> Data? {
        switch self {
        case .string(let text):
            guard let first = text.unicodeScalars.first, openings.unicodeScalars.contains(first) else {
                return nil
            }
            return Data(text.utf8)
        case .data(let bytes):
            let whiteSpace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
            guard let first = bytes.first(where: { !whiteSpace.contains($0) }), openings.utf8.contains(first)
            else { return nil }
            return bytes
        default:
            return nil
        }
    }
}

extension PreferenceValue {
    /// A collection stored as one string of JSON text, starting with `opening` (`[` or `{`), as
    /// `@AppStorage` stores a collection made `RawRepresentable` through `JSONEncoder`, and
    /// Defaults before version 5 stores a whole `[Codable]` (or as data holding that JSON, as
    /// `UserDefaults.set(try JSONEncoder().encode(v), forKey:)` stores it); `nil` for anything else.
    ///
    /// A `Decodable` collection is decoded as it was encoded (`JSONDecoder`: dates as numbers
    /// too); any other is read from the property list the JSON makes.
    ///
    /// ```swift
    /// [String].fromJSONText(.string(#"["fr","ja"]"#), opening: "[")  // ["fr", "ja"]
    /// ```
    static func fromJSONText(_ stored: PropertyListValue, opening: Unicode.Scalar) -> Self? {
        guard let data = stored.olderJSON(opening: String(opening)) else { return nil }
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

/// Where and how JSON did not decode, briefly (`port: missing`, `host: another type`), so the
/// one line a failed read gives says "expected" and "found" once.
private func whereJSON(_ error: any Error) -> String {
    let (context, what): (DecodingError.Context, String)
    switch error {
    case DecodingError.typeMismatch(_, let c): (context, what) = (c, "another type")
    case DecodingError.valueNotFound(_, let c): (context, what) = (c, "null")
    case DecodingError.keyNotFound(let key, let c):
        (context, what) = (
            DecodingError.Context(codingPath: c.codingPath + [key], debugDescription: ""), "missing"
        )
    case DecodingError.dataCorrupted(let c): (context, what) = (c, "not valid JSON")
    default: return "\(error)"
    }
    let path = context.codingPath.map(\.stringValue).joined(separator: ".")
    return path.isEmpty ? what : "\(path): \(what)"
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
