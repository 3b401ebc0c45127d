import Foundation
import Prefs

/// What a declared key's value must be for the program to read it, as deep as its description
/// says: a type (as `prefs write` spells it), and for a collection its elements' shape or, for a
/// `Codable` struct stored as a dictionary, each field's type.
///
/// Every command that writes a declared key (`write` with every flag, `write DOMAIN 'PLIST'`,
/// `import`, `rename`) checks the value with it before anything is written, and reads old-style
/// text — where every scalar is a string — as the declared types.
struct DeclaredShape {
    /// `-int`, `-array`…; empty for any value.
    let type: String
    /// A collection's element shape (none when not known).
    let elements: [DeclaredShape]
    /// A struct's fields by name.
    let fields: [String: DeclaredShape]

    init(type: String, elements: [DeclaredShape] = [], fields: [String: DeclaredShape] = [:]) {
        self.type = type
        self.elements = elements
        self.fields = fields
    }

    /// The shape a key description declares.
    init(_ description: Preferences.KeyDescription) {
        self.init(
            type: description.type, elements: Self.chain(description.elementTypes[...]),
            fields: description.fieldTypes.mapValues { DeclaredShape(type: $0) })
    }

    private static func chain(_ types: ArraySlice<String>) -> [DeclaredShape] {
        guard let first = types.first, !first.isEmpty else { return [] }
        return [DeclaredShape(type: first, elements: chain(types.dropFirst()))]
    }

    /// The shape of the entry `key` of a dictionary of this shape, when declared.
    func entry(_ key: String) -> DeclaredShape? { fields[key] ?? elements.first }

    /// A value given as text without a type flag (old-style plist text, or XML), read as this shape.
    ///
    /// `5` is the integer 5 for an `-int`, and so is every `5` inside `{ a = 5; }` for a
    /// dictionary of integers. XML carries its own types, which are checked, not converted.
    func parse(untyped text: String, at path: String) throws -> PropertyListValue {
        let opening = text.first { !$0.isWhitespace }
        if opening == "<", PlistText.isXMLElement(text) {
            return try conform(try PlistText.parse(text), at: path, untyped: false)
        }
        if let parse = WriteAction.typeFlags[type], opening != "<" {
            guard let value = try? parse(text) else { throw mismatch(at: path, got: "'\(text)'") }
            return value
        }
        return try conform(try PlistText.parse(text), at: path, untyped: true)
    }

    /// The value as the program reads it, or an error naming what does not fit.
    ///
    /// `value` is checked against this shape; with `untyped`, its strings (all old-style text
    /// has) are read as the declared scalar types. The error names the first value that does not
    /// fit by its path inside the value (`maxConnections`, `[2]`).
    func conform(_ value: PropertyListValue, at path: String, untyped: Bool) throws -> PropertyListValue {
        if type.isEmpty { return value }
        if untyped, case .string(let text) = value, type != "-string", let parse = WriteAction.typeFlags[type]
        {
            guard let converted = try? parse(text) else { throw mismatch(at: path, got: "'\(text)'") }
            return converted
        }
        // A whole number is a real's value too (the program reads it as one).
        guard value.typeFlag == type || (type == "-float" && value.typeFlag == "-int") else {
            throw mismatch(at: path, got: Self.article(value.typeFlag) + " (\(PlistText.oldStyle(value)))")
        }
        switch value {
        case .array(let items) where !elements.isEmpty:
            return .array(
                try items.enumerated().map { index, item in
                    try elements[0].conform(item, at: "\(path)[\(index)]", untyped: untyped)
                })
        case .dictionary(let entries) where !elements.isEmpty || !fields.isEmpty:
            var conformed: [String: PropertyListValue] = [:]
            for (key, item) in entries.sorted(by: { $0.key < $1.key }) {
                conformed[key] =
                    try entry(key)?.conform(item, at: Self.path(path, key), untyped: untyped) ?? item
            }
            return .dictionary(conformed)
        default:
            return value
        }
    }

    /// `expected an integer, got …`, after the path inside the value when not at its top.
    private func mismatch(at path: String, got: String) -> CLIError {
        .badInput((path.isEmpty ? "" : "\(path): ") + "expected \(Self.article(type)), got \(got)")
    }

    /// The path of a dictionary's entry.
    private static func path(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// A type flag in words: `an integer`, `a dictionary`.
    static func article(_ type: String) -> String {
        switch type {
        case "-bool": "a boolean"
        case "-int": "an integer"
        case "-float": "a number"
        case "-string": "a string"
        case "-date": "a date"
        case "-data": "data"
        case "-array": "an array"
        case "-dict": "a dictionary"
        default: "any value"
        }
    }
}

extension Preferences.KeyDescription {
    /// Why the program would not read `value` (the wrong type anywhere inside it, or not one of
    /// the allowed values), or `nil` when it would.
    func problem(with value: PropertyListValue) -> String? {
        do {
            _ = try DeclaredShape(self).conform(value, at: "", untyped: false)
        } catch CLIError.badInput(let message) {
            return message
        } catch {
            return "\(error)"
        }
        guard let allowedValues, !allowedValues.allows(value) else { return nil }
        return "\(PlistText.oldStyle(value)) is not one of those values"
    }
}
