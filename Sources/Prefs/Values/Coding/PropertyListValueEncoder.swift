import Foundation

/// Encodes an `Encodable` value straight into a ``PropertyListValue``.
///
/// It produces what Foundation's `PropertyListEncoder` produces for the same value (dates as
/// dates, data as data, a struct as a dictionary), with two differences that make every value
/// survive: it does not go through plist bytes, and it has no `"$null"` marker, so a string
/// `"$null"` stays a string. A `nil` property is left out of its dictionary; a `nil` inside an
/// array has no property-list form and throws.
///
/// ```swift
/// struct Profile: Codable { var name: String }
/// try PropertyListValueEncoder().encode(Profile(name: "Zhuo"))  // .dictionary(["name": .string("Zhuo")])
/// ```
package struct PropertyListValueEncoder: Sendable {
    /// Creates an encoder.
    ///
    /// ```swift
    /// let encoder = PropertyListValueEncoder()
    /// ```
    package init() {}

    /// The value's property-list form; `nil` when the value encodes nothing (an optional's `nil`).
    ///
    /// Throws `EncodingError.invalidValue` for what a property list cannot hold (an integer
    /// above `Int64.max`, a `nil` in an array), and ``PreferenceError/Kind-swift.struct/nestedTooDeeply``
    /// for nesting deeper than ``PropertyListValue/maximumNestingDepth``.
    ///
    /// ```swift
    /// try PropertyListValueEncoder().encode([1, 2])  // .array([.integer(1), .integer(2)])
    /// ```
    package func encode<Value: Encodable>(_ value: Value) throws -> PropertyListValue? {
        let root = EncodedNode()
        try root.encode(value, codingPath: [])
        return try root.value(codingPath: [])
    }
}

/// One value being encoded: containers hand out nodes and fill them later, so the tree is built
/// from references and turned into a ``PropertyListValue`` at the end.
private final class EncodedNode {
    enum Content {
        case unset
        case null
        case value(PropertyListValue)
        case array([EncodedNode])
        case dictionary([String: EncodedNode])
    }

    var content = Content.unset

    /// Encodes `value` into this node, special-casing the types a property list holds natively.
    func encode<Value: Encodable>(_ value: Value, codingPath: [any CodingKey]) throws {
        // Checked here, where every nested value passes: it bounds the recursion of a deeply
        // nested (or self-referencing) value before it can exhaust the stack.
        guard codingPath.count <= PropertyListValue.maximumNestingDepth else {
            throw PreferenceError.nestedTooDeeply(limit: PropertyListValue.maximumNestingDepth)
        }
        switch value {
        case let date as Date: content = .value(.date(date))
        case let data as Data: content = .value(.data(data))
        default: try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }

    /// The finished value, or `nil` for a node that holds nothing or `nil`.
    func value(codingPath: [any CodingKey]) throws -> PropertyListValue? {
        switch content {
        case .unset, .null:
            return nil
        case .value(let value):
            return value
        case .array(let nodes):
            try checkDepth(codingPath)
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(nodes.count)
            for (index, node) in nodes.enumerated() {
                let path = codingPath + [IndexKey(index)]
                guard let element = try node.value(codingPath: path) else {
                    throw EncodingError.invalidValue(
                        Optional<Int>.none as Any,
                        .init(
                            codingPath: path,
                            debugDescription: "nil inside an array has no property-list form"))
                }
                elements.append(element)
            }
            return .array(elements)
        case .dictionary(let entries):
            try checkDepth(codingPath)
            var dictionary: [String: PropertyListValue] = [:]
            dictionary.reserveCapacity(entries.count)
            for (key, node) in entries {
                // A `nil` property is simply not stored, as `encodeIfPresent` would do.
                if let element = try node.value(codingPath: codingPath + [NameKey(key)]) {
                    dictionary[key] = element
                }
            }
            return .dictionary(dictionary)
        }
    }

    private func checkDepth(_ codingPath: [any CodingKey]) throws {
        guard codingPath.count < PropertyListValue.maximumNestingDepth else {
            throw PreferenceError.nestedTooDeeply(limit: PropertyListValue.maximumNestingDepth)
        }
    }

    func makeArray() {
        if case .array = content { return }
        content = .array([])
    }

    func appendElement() -> EncodedNode {
        let node = EncodedNode()
        if case .array(var nodes) = content {
            content = .unset  // keeps the array uniquely referenced while it grows
            nodes.append(node)
            content = .array(nodes)
        }
        return node
    }

    func makeDictionary() {
        if case .dictionary = content { return }
        content = .dictionary([:])
    }

    /// The node for `key`, created when missing (a key encoded twice keeps its last value).
    func entry(_ key: String) -> EncodedNode {
        guard case .dictionary(var entries) = content else { return EncodedNode() }
        if let existing = entries[key] { return existing }
        let node = EncodedNode()
        content = .unset  // keeps the dictionary uniquely referenced while it grows
        entries[key] = node
        content = .dictionary(entries)
        return node
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeDictionary()
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeContainer(node: node, codingPath: codingPath)
    }
}

/// Scalars as property-list values: every integer type as `.integer` when it fits `Int64`,
/// `.unsignedInteger` above (up to `UInt64.max`).
private func integer<Integer: FixedWidthInteger>(_ value: Integer, _ codingPath: [any CodingKey]) throws
    -> PropertyListValue
{
    if let unsigned = UInt64(exactly: value) { return .integer(unsigned: unsigned) }
    guard let wide = Int64(exactly: value) else {
        throw EncodingError.invalidValue(
            value,
            .init(
                codingPath: codingPath, debugDescription: "\(value) is beyond the property-list integer range"
            ))
    }
    return .integer(wide)
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .null }
    mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { node.content = .value(.double(value)) }
    mutating func encode(_ value: Float) throws { node.content = .value(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: Int8) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: Int16) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: Int32) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: Int64) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt8) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt16) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt32) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode(_ value: UInt64) throws { node.content = .value(try integer(value, codingPath)) }
    mutating func encode<Value: Encodable>(_ value: Value) throws {
        try node.encode(value, codingPath: codingPath)
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    private func single(_ key: Key) -> SingleNodeContainer {
        SingleNodeContainer(node: node.entry(key.stringValue), codingPath: codingPath + [key])
    }

    mutating func encodeNil(forKey key: Key) throws { _ = node.entry(key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Int16, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: UInt16, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        var s = single(key)
        try s.encode(value)
    }
    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        try node.entry(key.stringValue).encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = node.entry(key.stringValue)
        child.makeDictionary()
        return KeyedEncodingContainer(
            KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.entry(key.stringValue)
        child.makeArray()
        return UnkeyedNodeContainer(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.entry("super"), codingPath: codingPath + [NameKey("super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.entry(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let nodes) = node.content { return nodes.count }
        return 0
    }

    private func next() -> SingleNodeContainer {
        let path = codingPath + [IndexKey(count)]
        return SingleNodeContainer(node: node.appendElement(), codingPath: path)
    }

    mutating func encodeNil() throws {
        var s = next()
        try s.encodeNil()
    }
    mutating func encode(_ value: Bool) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: String) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Double) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Float) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Int) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Int8) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Int16) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Int32) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: Int64) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: UInt) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: UInt8) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: UInt16) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: UInt32) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode(_ value: UInt64) throws {
        var s = next()
        try s.encode(value)
    }
    mutating func encode<Value: Encodable>(_ value: Value) throws {
        var s = next()
        try s.encode(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = codingPath + [IndexKey(count)]
        let child = node.appendElement()
        child.makeDictionary()
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(count)]
        let child = node.appendElement()
        child.makeArray()
        return UnkeyedNodeContainer(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [IndexKey(count)]
        return NodeEncoder(node: node.appendElement(), codingPath: path)
    }
}

/// A coding key for an array position, in coding paths of errors.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// A coding key for a dictionary key, in coding paths of errors and for `super`.
struct NameKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
