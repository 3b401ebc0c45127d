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
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        try fromRawValue(stored)
    }
}

extension PreferenceValue where Self: RawRepresentable, RawValue: PreferenceValue {
    fileprivate static func fromRawValue(_ stored: PropertyListValue) throws -> Self {
        let raw = try RawValue.deserialize(stored)
        guard let value = Self(rawValue: raw) else {
            throw ValueCodingError.notRepresentable(
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
        // Foundation's encoder refuses a top-level scalar, so the value travels inside an array.
        let encoded: Data
        do {
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            encoded = try encoder.encode([value])
        } catch {
            throw ValueCodingError.notRepresentable(type: "\(Self.self)", reason: "encoding failed: \(error)")
        }
        let object = try? PropertyListSerialization.propertyList(from: encoded, format: nil)
        guard let wrapper = object.flatMap(PropertyListValue.init(foundationObject:)),
            case .array(let elements) = wrapper, let element = elements.first
        else {
            throw ValueCodingError.notRepresentable(
                type: "\(Self.self)", reason: "encoding produced no value")
        }
        return element
    }

    /// Rebuilds the value with its `Decodable` conformance.
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        do {
            let data = try PropertyListSerialization.data(
                fromPropertyList: PropertyListValue.array([stored]).foundationObject, format: .binary,
                options: 0)
            guard let value = try PropertyListDecoder().decode([Self].self, from: data).first else {
                throw mismatch(stored)
            }
            return value
        } catch let error as ValueCodingError {
            throw error
        } catch {
            throw ValueCodingError.typeMismatch(expected: "\(Self.self) (\(describe(error)))", found: stored)
        }
    }
}

/// The useful part of a `DecodingError`: which field and why, without the type dump.
private func describe(_ error: any Error) -> String {
    guard let decoding = error as? DecodingError else { return "\(error)" }
    let context: DecodingError.Context
    switch decoding {
    case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
        context = c
    @unknown default:
        return "\(error)"
    }
    // The first path element is the wrapper array's index; leave it out.
    let path = context.codingPath.dropFirst().map(\.stringValue).joined(separator: ".")
    return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
}
