import Foundation

/// A type that can be stored as a preference: it knows how to become a ``PropertyListValue``
/// and how to come back from one.
///
/// The standard types (`Bool`, the integers, `Float`, `Double`, `String`, `Date`, `Data`, `URL`,
/// `UUID`, arrays, string-keyed dictionaries and optionals of these) conform already.
/// `RawRepresentable` and `Codable` types conform by declaring it; the implementation comes from
/// the library. Any other type bridges itself by implementing the two functions:
///
/// ```swift
/// struct RGB: PreferenceValue {
///     var red, green, blue: UInt8
///     static func serialize(_ value: RGB) throws -> PropertyListValue? {
///         .data(Data([value.red, value.green, value.blue]))
///     }
///     static func deserialize(_ stored: PropertyListValue) throws -> RGB {
///         guard case .data(let bytes) = stored, bytes.count == 3 else {
///             throw PreferenceError(.typeMismatch, "expected RGB, found \(stored)")
///         }
///         return RGB(red: bytes[bytes.startIndex], green: bytes[bytes.startIndex + 1],
///                    blue: bytes[bytes.startIndex + 2])
///     }
/// }
/// ```
///
/// Rules for an implementation:
/// - `deserialize(serialize(v))` gives back a value equal to `v`.
/// - Both functions are pure: no side effects, safe from any thread.
/// - A value that cannot be represented throws ``PreferenceError`` (``PreferenceError/Kind-swift.struct/notRepresentable``,
///   or ``PreferenceError/Kind-swift.struct/typeMismatch`` for a stored value that does not fit)
///   instead of trapping.
public protocol PreferenceValue: Sendable {
    /// Turns a value into its stored form; `nil` means "nothing stored" (an optional's `nil`).
    ///
    /// ```swift
    /// try Int.serialize(3)  // .integer(3)
    /// ```
    static func serialize(_ value: Self) throws -> PropertyListValue?

    /// Rebuilds a value from its stored form, throwing when the stored value does not fit.
    ///
    /// ```swift
    /// try Int.deserialize(.integer(3))  // 3
    /// ```
    static func deserialize(_ stored: PropertyListValue) throws -> Self

}

/// The stored type of `type` as `prefs write` spells it (`-bool`, `-int`, `-float`, `-string`,
/// `-date`, `-data`, `-array`, `-dict`), for the key descriptions tools read; empty when it
/// depends on the value (a key's description then takes its default's).
///
/// ```swift
/// storedTypeFlag(of: Double.self)  // "-float"
/// ```
///
/// Told from the type at run time rather than asked of it, so a value type has nothing more to
/// declare (and the standard types carry no extra public member).
func storedTypeFlag(of type: Any.Type) -> String {
    switch type {
    case is Bool.Type: return "-bool"
    case is any FixedWidthInteger.Type: return "-int"
    case is any BinaryFloatingPoint.Type: return "-float"
    case is String.Type, is URL.Type, is UUID.Type: return "-string"
    case is Date.Type: return "-date"
    case is Data.Type: return "-data"
    case let stored as any StoredAs.Type: return stored.storedTypeFlag
    case let raw as any RawRepresentable.Type: return rawValueFlag(of: raw)
    default: return ""
    }
}

/// The flag of a raw-representable type's raw value (which is what is stored).
private func rawValueFlag<Raw: RawRepresentable>(of type: Raw.Type) -> String {
    storedTypeFlag(of: Raw.RawValue.self)
}

/// The stored types of a collection's elements, outermost first (`["-array", "-int"]` for
/// `[[Int]]`), as far as the types tell them; empty for a type that is no collection.
///
/// ```swift
/// storedElementTypes(of: [String: Int].self)  // ["-int"]
/// ```
func storedElementTypes(of type: Any.Type) -> [String] {
    guard let stored = type as? any StoredAs.Type, let element = stored.storedElement else { return [] }
    let flag = storedTypeFlag(of: element)
    return flag.isEmpty ? [] : [flag] + storedElementTypes(of: element)
}

/// The generic standard types, which say their stored type themselves.
protocol StoredAs {
    static var storedTypeFlag: String { get }
    /// The type of each stored element (`nil` for an optional, which is its wrapped type).
    static var storedElement: Any.Type? { get }
}

extension Array: StoredAs {
    static var storedTypeFlag: String { "-array" }
    static var storedElement: Any.Type? { Element.self }
}
extension Set: StoredAs {
    static var storedTypeFlag: String { "-array" }
    static var storedElement: Any.Type? { Element.self }
}
extension ClosedRange: StoredAs {
    static var storedTypeFlag: String { "-array" }
    static var storedElement: Any.Type? { Bound.self }
}
extension Range: StoredAs {
    static var storedTypeFlag: String { "-array" }
    static var storedElement: Any.Type? { Bound.self }
}
extension Dictionary: StoredAs {
    static var storedTypeFlag: String { "-dict" }
    static var storedElement: Any.Type? { Value.self }
}
extension Optional: StoredAs {
    static var storedTypeFlag: String { Prefs.storedTypeFlag(of: Wrapped.self) }
    static var storedElement: Any.Type? { (Wrapped.self as? any StoredAs.Type)?.storedElement }
}

extension PreferenceValue {
    /// Serializes a value that must produce something (an element of an array or dictionary).
    static func serializeRequired(_ value: Self, context: String) throws -> PropertyListValue {
        guard let stored = try serialize(value) else {
            throw PreferenceError.notRepresentable(
                type: swiftSpelling(of: Self.self), reason: "nil cannot be stored \(context)")
        }
        return stored
    }

    @usableFromInline
    static func mismatch(_ found: PropertyListValue) -> PreferenceError {
        .typeMismatch(expected: swiftSpelling(of: Self.self), found: found)
    }
}
