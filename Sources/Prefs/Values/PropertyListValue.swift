import Foundation

/// A property-list value: the one representation every store reads and writes.
///
/// Typed values are turned into a `PropertyListValue` by their ``PreferenceValue`` conformance
/// before they reach a store, and back again when read. Stores, the `prefs` tool and the
/// diagnostics all speak this one model.
///
/// ```swift
/// let value: PropertyListValue = .dictionary(["volume": .double(0.5), "muted": .bool(false)])
/// store.setValue(value, forKey: "audio")
/// ```
public enum PropertyListValue: Sendable, Hashable {
    /// A Boolean (`<true/>` or `<false/>`).
    case bool(Bool)
    /// A signed 64-bit integer (`<integer>`).
    case integer(Int64)
    /// A double-precision real number (`<real>`).
    case double(Double)
    /// A Unicode string (`<string>`).
    case string(String)
    /// A point in time (`<date>`).
    case date(Date)
    /// Raw bytes (`<data>`).
    case data(Data)
    /// An ordered list of values (`<array>`).
    case array([PropertyListValue])
    /// A string-keyed dictionary of values (`<dict>`).
    case dictionary([String: PropertyListValue])

    /// The property-list type name of this value, as `defaults read-type` prints it.
    ///
    /// ```swift
    /// PropertyListValue.integer(3).typeName  // "integer"
    /// ```
    public var typeName: String {
        switch self {
        case .bool: "boolean"
        case .integer: "integer"
        case .double: "float"
        case .string: "string"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}

extension PropertyListValue: CustomStringConvertible {
    /// A short description for diagnostics: the type name and, for scalars, the value.
    ///
    /// ```swift
    /// PropertyListValue.string("hi").description  // "string \"hi\""
    /// ```
    public var description: String {
        switch self {
        case .bool(let value): "boolean \(value)"
        case .integer(let value): "integer \(value)"
        case .double(let value): "float \(value)"
        case .string(let value): "string \(String(reflecting: value.prefix(60)))"
        case .date(let value): "date \(value.timeIntervalSince1970)"
        case .data(let value): "data (\(value.count) bytes)"
        case .array(let value): "array (\(value.count) elements)"
        case .dictionary(let value): "dictionary (\(value.count) entries)"
        }
    }
}
