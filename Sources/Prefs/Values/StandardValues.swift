import Foundation

// The conformances of the standard types, in one place. Each one maps to the property-list type a
// plain `UserDefaults` user would expect, so values stay readable by programs that do not use Prefs.

extension PropertyListValue: PreferenceValue {
    /// Stores the value as it is.
    public static func serialize(_ value: PropertyListValue) -> PropertyListValue? { value }
    /// Returns the stored value as it is.
    public static func deserialize(_ stored: PropertyListValue) -> PropertyListValue { stored }
}

extension Bool: PreferenceValue {
    /// Stores a Boolean as `<true/>`/`<false/>`.
    public static func serialize(_ value: Bool) -> PropertyListValue? { .bool(value) }
    /// Reads only a stored Boolean: an integer or a string is a mismatch, not a guess.
    public static func deserialize(_ stored: PropertyListValue) throws -> Bool {
        guard case .bool(let value) = stored else { throw mismatch(stored) }
        return value
    }
}

/// Integers are stored as 64-bit property-list integers; every sized integer type shares this.
/// (`Codable` in the constraint makes this more specific than the `Codable` default.)
extension PreferenceValue where Self: FixedWidthInteger & Codable {
    /// Stores the integer, or throws when it is beyond `Int64` (only `UInt`/`UInt64` can be).
    public static func serialize(_ value: Self) throws -> PropertyListValue? {
        guard let wide = Int64(exactly: value) else {
            throw ValueCodingError.notRepresentable(
                type: "\(Self.self)", reason: "\(value) is beyond the property-list integer range (Int64)")
        }
        return .integer(wide)
    }

    /// Reads a stored integer, or a real with no fractional part, when it fits this type exactly.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        switch stored {
        case .integer(let wide):
            if let value = Self(exactly: wide) { return value }
        case .double(let real):
            if let value = Self(exactly: real) { return value }
        default:
            break
        }
        throw mismatch(stored)
    }
}

extension Int: PreferenceValue {}
extension Int8: PreferenceValue {}
extension Int16: PreferenceValue {}
extension Int32: PreferenceValue {}
extension Int64: PreferenceValue {}
extension UInt: PreferenceValue {}
extension UInt8: PreferenceValue {}
extension UInt16: PreferenceValue {}
extension UInt32: PreferenceValue {}
extension UInt64: PreferenceValue {}

/// Reals are stored as property-list reals (`Double`); an integer is read as a real too.
extension PreferenceValue where Self: BinaryFloatingPoint & Codable {
    /// Stores the number as a `Double`, which holds every `Float` exactly.
    public static func serialize(_ value: Self) -> PropertyListValue? { .double(Double(value)) }

    /// Reads a stored real or integer.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        switch stored {
        case .double(let real): return Self(real)
        case .integer(let whole): return Self(whole)
        default: throw mismatch(stored)
        }
    }
}

extension Double: PreferenceValue {}
extension Float: PreferenceValue {}

extension String: PreferenceValue {
    /// Stores the string as `<string>`.
    public static func serialize(_ value: String) -> PropertyListValue? { .string(value) }
    /// Reads only a stored string.
    public static func deserialize(_ stored: PropertyListValue) throws -> String {
        guard case .string(let value) = stored else { throw mismatch(stored) }
        return value
    }
}

extension Date: PreferenceValue {
    /// Stores the date as `<date>`.
    public static func serialize(_ value: Date) -> PropertyListValue? { .date(value) }
    /// Reads only a stored date.
    public static func deserialize(_ stored: PropertyListValue) throws -> Date {
        guard case .date(let value) = stored else { throw mismatch(stored) }
        return value
    }
}

extension Data: PreferenceValue {
    /// Stores the bytes as `<data>`.
    public static func serialize(_ value: Data) -> PropertyListValue? { .data(value) }
    /// Reads only stored data.
    public static func deserialize(_ stored: PropertyListValue) throws -> Data {
        guard case .data(let value) = stored else { throw mismatch(stored) }
        return value
    }
}

extension URL: PreferenceValue {
    /// Stores the URL as its exact `absoluteString`, whatever its scheme.
    ///
    /// Foundation's `UserDefaults.set(_:forKey:)` for URLs keeps only the path on Linux
    /// (`https://example.com/a` comes back as `file:///a`); storing the string avoids that.
    public static func serialize(_ value: URL) -> PropertyListValue? { .string(value.absoluteString) }

    /// Reads a stored string that parses as a URL (or holds one as a JSON string,
    /// `"https:\/\/example.com"` with its quotes, as Defaults stores URLs).
    public static func deserialize(_ stored: PropertyListValue) throws -> URL {
        if let text = stored.decodedFromJSONText(String.self), let url = URL(string: text) { return url }
        guard case .string(let text) = stored, let url = URL(string: text) else { throw mismatch(stored) }
        return url
    }
}

extension UUID: PreferenceValue {
    /// Stores the UUID as its canonical string.
    public static func serialize(_ value: UUID) -> PropertyListValue? { .string(value.uuidString) }
    /// Reads a stored string that parses as a UUID.
    public static func deserialize(_ stored: PropertyListValue) throws -> UUID {
        guard case .string(let text) = stored, let uuid = UUID(uuidString: text) else {
            throw mismatch(stored)
        }
        return uuid
    }
}

extension Optional: PreferenceValue where Wrapped: PreferenceValue {
    /// Stores the wrapped value; `nil` stores nothing, so the key is removed.
    public static func serialize(_ value: Wrapped?) throws -> PropertyListValue? {
        guard let value else { return nil }
        return try Wrapped.serialize(value)
    }
    /// Reads the wrapped value.
    public static func deserialize(_ stored: PropertyListValue) throws -> Wrapped? {
        try Wrapped.deserialize(stored)
    }
}

extension Array: PreferenceValue where Element: PreferenceValue {
    /// Stores the elements as `<array>`; a `nil` element cannot be stored and throws.
    public static func serialize(_ value: [Element]) throws -> PropertyListValue? {
        .array(try value.map { try Element.serializeRequired($0, context: "inside an array") })
    }
    /// Reads a stored array whose every element fits `Element`.
    public static func deserialize(_ stored: PropertyListValue) throws -> [Element] {
        guard case .array(let elements) = stored else { throw mismatch(stored) }
        return try elements.map(Element.deserialize)
    }
}

extension Dictionary: PreferenceValue where Key == String, Value: PreferenceValue {
    /// Stores the entries as `<dict>`; a `nil` value cannot be stored and throws.
    public static func serialize(_ value: [String: Value]) throws -> PropertyListValue? {
        .dictionary(try value.mapValues { try Value.serializeRequired($0, context: "inside a dictionary") })
    }
    /// Reads a stored dictionary whose every value fits `Value`.
    public static func deserialize(_ stored: PropertyListValue) throws -> [String: Value] {
        guard case .dictionary(let entries) = stored else { throw mismatch(stored) }
        return try entries.mapValues(Value.deserialize)
    }
}
