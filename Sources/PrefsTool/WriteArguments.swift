import Foundation
import Prefs

/// What `write DOMAIN KEY …` asks for, parsed completely before anything is opened or written.
enum WriteAction: Equatable {
    case set(PropertyListValue)
    case arrayAdd([PropertyListValue])
    case dictionaryAdd([String: PropertyListValue])

    /// Parses the arguments after `write DOMAIN KEY`; a value without a type flag inside
    /// `-array` or `-dict` is read as the element or field type of the key's declared `shape`.
    static func parse(_ arguments: [String], shape: DeclaredShape? = nil) throws -> WriteAction {
        guard let first = arguments.first else { throw CLIError.usage("write needs a value after the key") }
        switch first {
        case "-array", "-array-add":
            let elements = try parseElements(Array(arguments.dropFirst()), shape: shape?.elements.first)
            return first == "-array" ? .set(.array(elements)) : .arrayAdd(elements)
        case "-dict", "-dict-add":
            let entries = try parseEntries(Array(arguments.dropFirst()), shape: shape)
            return first == "-dict" ? .set(.dictionary(entries)) : .dictionaryAdd(entries)
        default:
            var remaining = arguments[...]
            let value = try parseOne(&remaining, shape: nil, at: "")
            guard remaining.isEmpty else {
                throw CLIError.usage(
                    "write takes one value; unexpected '\(remaining.first!)' (quote a value with spaces)")
            }
            return .set(value)
        }
    }

    /// Applies the action to what is stored; `nil` when the key is new.
    func apply(to stored: PropertyListValue?, key: String) throws -> PropertyListValue {
        switch self {
        case .set(let value):
            return value
        case .arrayAdd(let elements):
            switch stored {
            case nil: return .array(elements)
            case .array(let existing)?: return .array(existing + elements)
            case let other?:
                throw CLIError.badInput("-array-add: '\(key)' is \(other.typeName), not an array")
            }
        case .dictionaryAdd(let entries):
            switch stored {
            case nil: return .dictionary(entries)
            case .dictionary(let existing)?: return .dictionary(existing.merging(entries) { _, new in new })
            case let other?:
                throw CLIError.badInput("-dict-add: '\(key)' is \(other.typeName), not a dictionary")
            }
        }
    }

    /// The type flags and what each accepts; used by `write` and inside `-array`/`-dict`.
    static let typeFlags: [String: @Sendable (String) throws -> PropertyListValue] = [
        "-string": { .string($0) },
        "-int": parseInteger, "-integer": parseInteger,
        "-float": { text in
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let real = Double(trimmed) else {
                throw CLIError.badInput("-float needs a number, got '\(text)'")
            }
            // `Double("1e999")` is infinity: a number too large is an error, not infinity.
            let saysInfinity = trimmed.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "+-"))
                .hasPrefix("inf")
            guard real.isFinite || real.isNaN || saysInfinity else {
                throw CLIError.badInput("-float: \(text) is outside the range of a double")
            }
            return .double(real)
        },
        "-bool": parseBool, "-boolean": parseBool,
        "-date": { text in
            guard let date = CalendarDate.parse(text) else {
                throw CLIError.badInput(
                    "-date needs a date such as 2024-05-01T12:00:00Z or '2024-05-01 12:00:00 +0000', got '\(text)'"
                )
            }
            return .date(date)
        },
        "-data": { text in
            guard let bytes = Hex.decode(text) else {
                throw CLIError.badInput("-data needs hexadecimal digits in pairs, got '\(text)'")
            }
            return .data(bytes)
        },
    ]

    private static func parseInteger(_ text: String) throws -> PropertyListValue {
        guard let number = Int64(text.trimmingCharacters(in: .whitespaces)) else {
            throw CLIError.badInput(
                "-int needs a whole number between \(Int64.min) and \(Int64.max), got '\(text)'")
        }
        return .integer(number)
    }

    private static func parseBool(_ text: String) throws -> PropertyListValue {
        switch text.lowercased() {
        case "true", "yes", "1": return .bool(true)
        case "false", "no", "0": return .bool(false)
        default: throw CLIError.badInput("-bool needs true, false, yes or no, got '\(text)'")
        }
    }

    /// One value: a type flag and its text, or plist text (read as `shape` when declared).
    private static func parseOne(
        _ arguments: inout ArraySlice<String>, shape: DeclaredShape?, at path: String
    )
        throws -> PropertyListValue
    {
        guard let first = arguments.popFirst() else { throw CLIError.usage("a value is missing") }
        if let parse = typeFlags[first] {
            guard let text = arguments.popFirst() else { throw CLIError.usage("\(first) needs a value") }
            return try parse(text)
        }
        if first.hasPrefix("-"), first.count > 1, Double(first) == nil {
            throw CLIError.usage("unknown flag '\(first)'; see 'prefs help write'")
        }
        if let shape { return try shape.parse(untyped: first, at: path) }
        return try PlistText.parse(first)
    }

    private static func parseElements(_ arguments: [String], shape: DeclaredShape?) throws
        -> [PropertyListValue]
    {
        var remaining = arguments[...]
        var elements: [PropertyListValue] = []
        while !remaining.isEmpty {
            elements.append(try parseOne(&remaining, shape: shape, at: "element \(elements.count + 1)"))
        }
        return elements
    }

    private static func parseEntries(_ arguments: [String], shape: DeclaredShape?) throws -> [String:
        PropertyListValue]
    {
        var remaining = arguments[...]
        var entries: [String: PropertyListValue] = [:]
        while let key = remaining.popFirst() {
            guard !remaining.isEmpty else { throw CLIError.usage("-dict: the key '\(key)' has no value") }
            entries[key] = try parseOne(&remaining, shape: shape?.entry(key), at: key)
        }
        return entries
    }
}
