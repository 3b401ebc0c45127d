import Foundation

/// Decodes a `Decodable` value straight from a ``PropertyListValue``: the counterpart of
/// ``PropertyListValueEncoder``.
///
/// Numbers convert when the conversion is exact (an integer into a `Double`, a real with no
/// fraction into an `Int`); anything else of the wrong type throws `DecodingError` with the
/// coding path of the field.
///
/// ```swift
/// struct Profile: Codable { var name: String }
/// let profile = try PropertyListValueDecoder().decode(Profile.self, from: .dictionary(["name": .string("Zhuo")]))
/// ```
package struct PropertyListValueDecoder: Sendable {
    /// Creates a decoder.
    ///
    /// ```swift
    /// let decoder = PropertyListValueDecoder()
    /// ```
    package init() {}

    /// Rebuilds a value of `type` from `value`.
    ///
    /// ```swift
    /// try PropertyListValueDecoder().decode([Int].self, from: .array([.integer(1)]))  // [1]
    /// ```
    package func decode<Value: Decodable>(_ type: Value.Type, from value: PropertyListValue) throws -> Value {
        try decodeValue(type, from: value, codingPath: [])
    }
}

private func decodeValue<Value: Decodable>(
    _ type: Value.Type, from value: PropertyListValue, codingPath: [any CodingKey]
) throws -> Value {
    switch type {
    case is Date.Type:
        guard case .date(let date) = value else { throw mismatch(type, value, codingPath) }
        return date as! Value
    case is Data.Type:
        guard case .data(let data) = value else { throw mismatch(type, value, codingPath) }
        return data as! Value
    default:
        return try Value(from: ValueDecoder(value: value, codingPath: codingPath))
    }
}

private func mismatch(_ type: Any.Type, _ value: PropertyListValue, _ codingPath: [any CodingKey])
    -> DecodingError
{
    .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
}

private struct ValueDecoder: Decoder {
    let value: PropertyListValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let entries) = value else {
            throw mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedValueContainer<Key>(entries: entries, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, value, codingPath) }
        return UnkeyedValueContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }
}

/// Reads scalars with exact conversions only.
private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: PropertyListValue
    let codingPath: [any CodingKey]

    // A property list has no null: a present value is never nil.
    func decodeNil() -> Bool { false }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(type, value, codingPath) }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw mismatch(type, value, codingPath) }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case .double(let real): return real
        case .integer(let number): if let real = Double(exactly: number) { return real }
        case .unsignedInteger(let number): if let real = Double(exactly: number) { return real }
        default: break
        }
        throw mismatch(type, value, codingPath)
    }

    func decode(_ type: Float.Type) throws -> Float {
        let real = try decode(Double.self)
        let narrow = Float(real)
        // Rounding to the nearest `Float` is expected; overflowing to infinity is not.
        guard narrow.isFinite || !real.isFinite else { throw mismatch(type, value, codingPath) }
        return narrow
    }

    func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        switch value {
        case .integer(let number): if let exact = Integer(exactly: number) { return exact }
        case .unsignedInteger(let number): if let exact = Integer(exactly: number) { return exact }
        case .double(let real): if let exact = Integer(exactly: real) { return exact }
        default: break
        }
        throw mismatch(type, value, codingPath)
    }

    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try decodeValue(type, from: value, codingPath: codingPath)
    }
}

private struct KeyedValueContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entries: [String: PropertyListValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { entries.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

    private func single(_ key: Key) throws -> SingleValueContainer {
        guard let value = entries[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return SingleValueContainer(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try single(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try single(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try single(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try single(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try single(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try single(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try single(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try single(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try single(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try single(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try single(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try single(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try single(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try single(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try single(key).decode(type) }
    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try single(key).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let field = try single(key)
        return try ValueDecoder(value: field.value, codingPath: field.codingPath).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let field = try single(key)
        return try ValueDecoder(value: field.value, codingPath: field.codingPath).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let value = entries["super"] ?? .dictionary([:])
        return ValueDecoder(value: value, codingPath: codingPath + [NameKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        let field = try single(key)
        return ValueDecoder(value: field.value, codingPath: field.codingPath)
    }
}

private struct UnkeyedValueContainer: UnkeyedDecodingContainer {
    let elements: [PropertyListValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [PropertyListValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> SingleValueContainer {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: codingPath + [IndexKey(currentIndex)],
                    debugDescription: "the array has only \(elements.count) elements"))
        }
        defer { currentIndex += 1 }
        return SingleValueContainer(
            value: elements[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self, .init(codingPath: codingPath, debugDescription: "no more elements"))
        }
        return false
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decode(type) }
    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { try next(type).decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let element = try next([String: Any].self)
        return try ValueDecoder(value: element.value, codingPath: element.codingPath).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let element = try next([Any].self)
        return try ValueDecoder(value: element.value, codingPath: element.codingPath).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let element = try next(Any.self)
        return ValueDecoder(value: element.value, codingPath: element.codingPath)
    }
}
