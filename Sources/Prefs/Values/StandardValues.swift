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
    @inlinable
    public static func deserialize(_ stored: PropertyListValue) throws -> Bool {
        guard case .bool(let value) = stored else { throw mismatch(stored) }
        return value
    }
}

/// Integers are stored as 64-bit property-list integers; every sized integer type shares this.
/// (`Codable` in the constraint makes this more specific than the `Codable` default.)
extension PreferenceValue where Self: FixedWidthInteger & Codable {

    /// Stores the integer: `.integer` when it fits `Int64`, `.unsignedInteger` above (`UInt`
    /// and `UInt64` over their whole range).
    public static func serialize(_ value: Self) throws -> PropertyListValue? {
        if let wide = Int64(exactly: value) { return .integer(wide) }
        guard let unsigned = UInt64(exactly: value) else {
            throw PreferenceError.notRepresentable(
                type: swiftSpelling(of: Self.self),
                reason: "\(value) is beyond the property-list integer range")
        }
        return .unsignedInteger(unsigned)
    }

    /// Reads a stored integer, or a real with no fractional part, when it fits this type exactly.
    @inlinable
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        switch stored {
        case .integer(let wide):
            if let value = Self(exactly: wide) { return value }
        case .unsignedInteger(let wide):
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
    @inlinable
    public static func deserialize(_ stored: PropertyListValue) throws -> Self {
        switch stored {
        case .double(let real): return Self(real)
        case .integer(let whole): return Self(whole)
        case .unsignedInteger(let whole): return Self(whole)
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
    /// Reads a stored array whose every element fits `Element`, or one string holding the array
    /// as JSON (`["fr","ja"]`: how `@AppStorage` and Defaults before version 5 store arrays).
    public static func deserialize(_ stored: PropertyListValue) throws -> [Element] {
        guard case .array(let elements) = stored else {
            if let array = fromJSONText(stored, opening: "[") { return array }
            throw mismatch(stored)
        }
        return try elements.map(Element.deserialize)
    }
}

/// A type whose values can key a stored dictionary.
///
/// A key is written as its `description` and read back with `init?(_:)`. `String`, `Substring`,
/// `Character`, the integer types, `Double`, `Float` and `Bool` are such types; declare your own
/// (any `LosslessStringConvertible & Hashable & Sendable` type) in one line. (A protocol of its
/// own because Swift cannot make `Dictionary`'s conformance depend on its key being `Sendable`.)
///
/// ```swift
/// struct Weekday: LosslessStringConvertible, Hashable, Sendable {
///     let number: Int
///     init?(_ description: String) { guard let number = Int(description) else { return nil }; self.number = number }
///     var description: String { String(number) }
/// }
/// extension Weekday: PreferenceDictionaryKey {}
/// let hours = Preferences.Key<[Weekday: Int]>("hours", default: [:])
/// ```
public protocol PreferenceDictionaryKey: LosslessStringConvertible, Hashable, Sendable {}

extension String: PreferenceDictionaryKey {}
extension Int: PreferenceDictionaryKey {}
extension Int8: PreferenceDictionaryKey {}
extension Int16: PreferenceDictionaryKey {}
extension Int32: PreferenceDictionaryKey {}
extension Int64: PreferenceDictionaryKey {}
extension UInt: PreferenceDictionaryKey {}
extension UInt8: PreferenceDictionaryKey {}
extension UInt16: PreferenceDictionaryKey {}
extension UInt32: PreferenceDictionaryKey {}
extension UInt64: PreferenceDictionaryKey {}
extension Bool: PreferenceDictionaryKey {}
extension Double: PreferenceDictionaryKey {}
extension Float: PreferenceDictionaryKey {}
extension Character: PreferenceDictionaryKey {}
extension Substring: PreferenceDictionaryKey {}

extension Dictionary: PreferenceValue where Key: PreferenceDictionaryKey, Value: PreferenceValue {

    /// Stores the entries as `<dict>`, each key as its `description` (`[Int: V]` keys become
    /// `"1"`, `"2"` …); a `nil` value cannot be stored and throws.
    ///
    /// ```swift
    /// try [Int: String].serialize([1: "one"])  // .dictionary(["1": .string("one")])
    /// ```
    public static func serialize(_ value: [Key: Value]) throws -> PropertyListValue? {
        var entries: [String: PropertyListValue] = [:]
        for (key, element) in value {
            let name = key.description
            guard entries[name] == nil else {
                throw PreferenceError.notRepresentable(
                    type: swiftSpelling(of: Self.self),
                    reason: "two keys are both written \(String(reflecting: name))")
            }
            entries[name] = try Value.serializeRequired(element, context: "inside a dictionary")
        }
        return .dictionary(entries)
    }
    /// Reads a stored dictionary whose every key reads as `Key` and every value fits `Value`, or
    /// one string holding it as a JSON object (how `@AppStorage` stores a `RawRepresentable`
    /// dictionary).
    public static func deserialize(_ stored: PropertyListValue) throws -> [Key: Value] {
        guard case .dictionary(let entries) = stored else {
            if let dictionary = fromJSONText(stored, opening: "{") { return dictionary }
            throw mismatch(stored)
        }
        var result: [Key: Value] = [:]
        for (name, element) in entries {
            guard let key = Key(name) else {
                throw PreferenceError.unreadable(
                    type: swiftSpelling(of: Self.self),
                    reason: "the key \(String(reflecting: name)) is not a \(Key.self)")
            }
            result[key] = try Value.deserialize(element)
        }
        return result
    }
}

extension Set: PreferenceValue where Element: PreferenceValue {

    /// Stores the elements as `<array>` (in no particular order).
    ///
    /// ```swift
    /// try Set<Int>.serialize([1, 2])  // .array([.integer(2), .integer(1)])
    /// ```
    public static func serialize(_ value: Set<Element>) throws -> PropertyListValue? {
        .array(try value.map { try Element.serializeRequired($0, context: "inside a set") })
    }
    /// Reads a stored array whose every element fits `Element` (repeated elements count once), or
    /// one string holding the array as JSON.
    public static func deserialize(_ stored: PropertyListValue) throws -> Set<Element> {
        guard case .array(let elements) = stored else {
            if let set = fromJSONText(stored, opening: "[") { return set }
            throw mismatch(stored)
        }
        return Set(try elements.map(Element.deserialize))
    }
}

extension ClosedRange: PreferenceValue where Bound: PreferenceValue {

    /// Stores the bounds as a two-element `<array>`, lower first.
    ///
    /// ```swift
    /// try ClosedRange<Int>.serialize(1...5)  // .array([.integer(1), .integer(5)])
    /// ```
    public static func serialize(_ value: ClosedRange<Bound>) throws -> PropertyListValue? {
        try rangeBounds(value.lowerBound, value.upperBound)
    }
    /// Reads two bounds, the lower not above the upper (anything else throws, never traps).
    public static func deserialize(_ stored: PropertyListValue) throws -> ClosedRange<Bound> {
        let (lower, upper) = try readRangeBounds(stored, as: Bound.self, type: swiftSpelling(of: Self.self))
        return lower...upper
    }
}

extension Range: PreferenceValue where Bound: PreferenceValue {

    /// Stores the bounds as a two-element `<array>`, lower first.
    ///
    /// ```swift
    /// try Range<Double>.serialize(0..<1)  // .array([.double(0), .double(1)])
    /// ```
    public static func serialize(_ value: Range<Bound>) throws -> PropertyListValue? {
        try rangeBounds(value.lowerBound, value.upperBound)
    }
    /// Reads two bounds, the lower not above the upper (anything else throws, never traps).
    public static func deserialize(_ stored: PropertyListValue) throws -> Range<Bound> {
        let (lower, upper) = try readRangeBounds(stored, as: Bound.self, type: swiftSpelling(of: Self.self))
        return lower..<upper
    }
}

private func rangeBounds<Bound: PreferenceValue>(_ lower: Bound, _ upper: Bound) throws -> PropertyListValue {
    .array([
        try Bound.serializeRequired(lower, context: "as a range's bound"),
        try Bound.serializeRequired(upper, context: "as a range's bound"),
    ])
}

private func readRangeBounds<Bound: PreferenceValue & Comparable>(
    _ stored: PropertyListValue, as _: Bound.Type, type: String
) throws -> (Bound, Bound) {
    guard case .array(let bounds) = stored, bounds.count == 2 else {
        throw PreferenceError.typeMismatch(expected: "\(type) (an array of two bounds)", found: stored)
    }
    let lower = try Bound.deserialize(bounds[0])
    let upper = try Bound.deserialize(bounds[1])
    guard lower <= upper else {
        throw PreferenceError.unreadable(type: type, reason: "the lower bound is above the upper bound")
    }
    return (lower, upper)
}

extension CGFloat: PreferenceValue {}
