import Foundation
import Prefs

/// Text forms of values: old-style plist text (what `defaults` prints and accepts), JSON, and the
/// XML and binary plist files of `export`/`import`.
package enum PlistText {
    // MARK: - Printing

    /// A value as `defaults read` prints it: scalars bare, collections as old-style plist text.
    package static func bare(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let text): text
        case .bool, .integer, .unsignedInteger, .double, .date: scalarText(value)
        case .data, .array, .dictionary: oldStyle(value)
        }
    }

    /// The text of a number, a boolean or a date (`1`, `0.5`, `1e+20`,
    /// `2024-05-01 12:00:00 +0000`); old-style text holds them as strings.
    private static func scalarText(_ value: PropertyListValue) -> String {
        switch value {
        case .bool(let flag): flag ? "1" : "0"
        case .integer(let number): String(number)
        case .unsignedInteger(let number): String(number)
        case .double(let real): formatReal(real)
        case .date(let date): CalendarDate.plistText(date)
        case .string(let text): text
        case .data, .array, .dictionary: oldStyle(value)
        }
    }

    /// A value as `prefs describe` shows it: old-style text on one line, a Boolean as `true` or
    /// `false` (as the program declares it), not `defaults`' 1 or 0.
    static func described(_ value: PropertyListValue) -> String {
        switch value {
        case .bool(let flag): return flag ? "true" : "false"
        // On one line, as the rest of `describe`'s line: `(a, b)`, `{ k = v; }`.
        case .array(let elements): return "(" + elements.map(described).joined(separator: ", ") + ")"
        case .dictionary(let entries):
            guard !entries.isEmpty else { return "{}" }
            let pairs = entries.sorted { StoreKey($0.key) < StoreKey($1.key) }
            return "{ "
                + pairs.map { "\(quoteIfNeeded($0.key)) = \(described($0.value));" }.joined(separator: " ")
                + " }"
        default: return oldStyle(value)
        }
    }

    /// Old-style plist text, indented by four spaces a level.
    package static func oldStyle(_ value: PropertyListValue, indent: String = "") -> String {
        let inner = indent + "    "
        switch value {
        // `1e+20` and a date hold characters CoreFoundation does not read bare: quoted as needed.
        case .bool, .integer, .unsignedInteger, .double, .date: return quoteIfNeeded(scalarText(value))
        case .string(let text): return quoteIfNeeded(text)
        case .data(let bytes): return "<" + bytes.map { String(format: "%02x", $0) }.joined() + ">"
        case .array(let elements):
            guard !elements.isEmpty else { return "(\n\(indent))" }
            let lines = elements.map { inner + oldStyle($0, indent: inner) }
            return "(\n" + lines.joined(separator: ",\n") + "\n\(indent))"
        case .dictionary(let entries):
            return oldStyle(pairs: entries.map { ($0.key, $0.value) }, indent: indent)
        }
    }

    /// A domain as old-style plist text: every key exact, sorted by Unicode scalars.
    static func oldStyle(domain: [StoreKey: PropertyListValue], indent: String = "") -> String {
        oldStyle(pairs: domain.map { ($0.key.name, $0.value) }, indent: indent)
    }

    private static func oldStyle(pairs: [(String, PropertyListValue)], indent: String) -> String {
        object(pairs, indent: indent, step: "    ", empty: "{\n\(indent)}", separator: "\n") {
            key, value, inner in
            "\(inner)\(quoteIfNeeded(key)) = \(oldStyle(value, indent: inner));"
        }
    }

    /// A dictionary in either syntax: `{`, one entry a line sorted by Unicode scalars (so every
    /// key is exact and the order never depends on hashing), `}`.
    private static func object(
        _ pairs: [(String, PropertyListValue)], indent: String, step: String, empty: String,
        separator: String,
        entry: (String, PropertyListValue, String) -> String
    ) -> String {
        guard !pairs.isEmpty else { return empty }
        let inner = indent + step
        let lines = pairs.sorted { StoreKey($0.0) < StoreKey($1.0) }.map {
            entry($0.0, $0.1, inner)
        }
        return "{\n" + lines.joined(separator: separator) + "\n\(indent)}"
    }

    static func formatReal(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "inf" : "-inf" }
        if real == 0 && real.sign == .minus { return "-0" }  // keeps the sign, as `-float -0` wrote it
        if real == real.rounded(), abs(real) < 1e15 { return String(Int64(real)) }
        return "\(real)"
    }

    /// The characters CoreFoundation reads in an unquoted string (`isValidUnquotedStringCharacter`).
    private static let bareCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$/:.-".unicodeScalars)

    /// `text` bare when CoreFoundation (and GNUstep) would read it back as the same string,
    /// otherwise quoted: only its unquoted characters, and nothing a reader takes for a comment.
    static func quoteIfNeeded(_ text: String) -> String {
        let bare =
            !text.isEmpty && text.unicodeScalars.allSatisfy(bareCharacters.contains)
            && !text.contains("//") && !text.contains("/*")
        return bare ? text : quote(text)
    }

    static func quote(_ text: String) -> String {
        quoted(text, controlEscape: "\\U")
    }

    /// `text` in double quotes with quotes, backslashes and control characters escaped; plist
    /// text and JSON differ only in how a control character is written (`\U0001`, `\u0001`).
    private static func quoted(_ text: String, controlEscape: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20: result += controlEscape + String(format: "%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    // MARK: - JSON

    /// JSON for scripts: dates as ISO 8601 strings, data as base64, non-finite reals as null.
    static func json(_ value: PropertyListValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .bool(let flag): return flag ? "true" : "false"
        case .integer(let number): return String(number)
        case .unsignedInteger(let number): return String(number)
        case .double(let real): return real.isFinite ? "\(real)" : "null"
        case .string(let text): return jsonString(text)
        case .date(let date): return jsonString(CalendarDate.iso8601(date))
        case .data(let bytes): return jsonString(bytes.base64EncodedString())
        case .array(let elements):
            guard !elements.isEmpty else { return "[]" }
            return "[\n" + elements.map { inner + json($0, indent: inner) }.joined(separator: ",\n")
                + "\n\(indent)]"
        case .dictionary(let entries):
            return json(pairs: entries.map { ($0.key, $0.value) }, indent: indent)
        }
    }

    /// Several domains as one dictionary of domains (old-style text, or JSON), each domain's keys
    /// exact; the domains are file or namespace names.
    static func domains(_ domains: [(name: String, entries: [StoreKey: PropertyListValue])], json: Bool)
        -> String
    {
        let indent = json ? "  " : "    "
        let lines = domains.map { name, entries in
            json
                ? "\(indent)\(jsonString(name)): \(self.json(domain: entries, indent: indent))"
                : "\(indent)\(quoteIfNeeded(name)) = \(oldStyle(domain: entries, indent: indent));"
        }
        guard !lines.isEmpty else { return json ? "{}" : "{\n}" }
        return "{\n" + lines.joined(separator: json ? ",\n" : "\n") + "\n}"
    }

    /// A value as JSON on one line, strings exactly as they are (for `--json watch`).
    static func jsonLine(_ value: PropertyListValue) -> String {
        switch value {
        case .array(let elements):
            return "[" + elements.map(jsonLine).joined(separator: ",") + "]"
        case .dictionary(let entries):
            let sorted = entries.sorted { StoreKey($0.key) < StoreKey($1.key) }
            return "{" + sorted.map { jsonString($0.key) + ":" + jsonLine($0.value) }.joined(separator: ",")
                + "}"
        default:
            return json(value)
        }
    }

    /// The first key (a path, `a.b.0`) whose value is a NaN or an infinity, which JSON cannot hold.
    static func nonFiniteNumber(in entries: [StoreKey: PropertyListValue]) -> String? {
        func find(_ value: PropertyListValue, _ path: String) -> String? {
            switch value {
            case .double(let real) where !real.isFinite: return path
            case .array(let elements):
                return elements.enumerated().lazy.compactMap { find($1, "\(path).\($0)") }.first
            case .dictionary(let nested):
                return nested.lazy.compactMap { find($1, "\(path).\($0)") }.first
            default: return nil
            }
        }
        return entries.sorted { $0.key < $1.key }.lazy.compactMap { find($0.value, $0.key.name) }.first
    }

    /// A domain as a JSON object: every key exact, sorted by Unicode scalars.
    static func json(domain: [StoreKey: PropertyListValue], indent: String = "") -> String {
        json(pairs: domain.map { ($0.key.name, $0.value) }, indent: indent)
    }

    private static func json(pairs: [(String, PropertyListValue)], indent: String) -> String {
        object(pairs, indent: indent, step: "  ", empty: "{}", separator: ",\n") { key, value, inner in
            "\(inner)\(jsonString(key)): \(json(value, indent: inner))"
        }
    }

    static func jsonString(_ text: String) -> String {
        quoted(text, controlEscape: "\\u")
    }

    // MARK: - Files

    enum FileFormat: String, CaseIterable, Sendable {
        case xml, binary, json
    }

    /// A domain as an XML, binary or JSON plist file; XML and JSON keep every key exactly.
    static func file(_ entries: [StoreKey: PropertyListValue], format: FileFormat) throws -> Data {
        switch format {
        case .json:
            if let path = nonFiniteNumber(in: entries) {
                throw CLIError.badInput(
                    "JSON has no NaN or infinity, and \(path) holds one; export as xml or binary instead")
            }
            return Data((json(domain: entries) + "\n").utf8)
        case .xml:
            return PlistFiles.xml(entries)
        case .binary:
            // Foundation writes binary plists; its dictionaries would merge keys that are
            // canonically equivalent, so such a domain is refused rather than changed, naming
            // the two keys.
            if let (first, second) = canonicallyEqualKeys(in: entries) {
                throw CLIError.badInput(
                    "the keys \(spelled(first)) and \(spelled(second)) differ only in Unicode normalization, and a binary plist written by Foundation would merge them; use --format xml or json"
                )
            }
            let plain = Dictionary(
                entries.map { ($0.key.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            return try PropertyListSerialization.data(
                fromPropertyList: PropertyListValue.dictionary(plain).foundationObject, format: .binary,
                options: 0)
        }
    }

    /// Two keys of the domain that Swift's `String` takes for one (canonically equivalent, as
    /// `é` and `e` + U+0301), if there are any. (Only the domain's own keys can differ so: a
    /// nested dictionary is a `[String: …]`, whose keys are compared the same way.)
    static func canonicallyEqualKeys(in entries: [StoreKey: PropertyListValue]) -> (String, String)? {
        var seen: [String: String] = [:]
        for key in entries.keys.map(\.name).sorted(by: { Array($0.utf8).lexicographicallyPrecedes($1.utf8) })
        {
            if let other = seen[key] { return (other, key) }
            seen[key] = key
        }
        return nil
    }

    /// A key quoted, with its Unicode scalars (`"café" (U+0063 U+0061 U+0066 U+00E9)`), so two
    /// that look the same are told apart.
    private static func spelled(_ key: String) -> String {
        let scalars = key.unicodeScalars.map { String(format: "U+%04X", $0.value) }.joined(separator: " ")
        return "\"\(key)\" (\(scalars))"
    }

    /// Reads an XML, binary, JSON or old-style plist file whose top level is a dictionary.
    ///
    /// The result is a domain, every key exact: the tool's own readers, not Foundation's (which
    /// merge keys that differ only in Unicode normalization).
    package static func readFile(_ data: Data) throws -> [StoreKey: PropertyListValue] {
        let trimmed = data.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        if data.starts(with: Array("bplist".utf8)) { return try PlistFiles.readBinary(data).domain() }
        if trimmed.first == UInt8(ascii: "<") { return try PlistFiles.readXML(data).domain() }
        if trimmed.first == UInt8(ascii: "{") {
            // JSON, or an old-style plist dictionary, which also starts with `{`.
            if let parsed = try? PlistFiles.readJSON(data) { return try parsed.domain() }
            return try parseDomain(String(decoding: data, as: UTF8.self))
        }
        throw CLIError.badInput("not an XML, binary or JSON property list")
    }

    // MARK: - Parsing old-style plist text

    /// Parses a value as `defaults write` does: old-style plist text, where every scalar is a
    /// string; `{…}` is a dictionary, `(…)` an array, `<hex>` data, `"…"` a quoted string, and
    /// anything else the string it is.
    package static func parse(_ text: String) throws -> PropertyListValue {
        // Text that does not open a plist structure is a string as it stands (spaces and all),
        // as `defaults write d k "hello world"` stores "hello world".
        guard let opening = text.first(where: { !$0.isWhitespace }), "{(<\"".contains(opening) else {
            return .string(text)
        }
        if opening == "<", isXMLElement(text) { return try PlistFiles.readXML(Data(text.utf8)).value }
        var parser = OldStyleParser(text)
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.isAtEnd else { throw parser.error("unexpected text after the value") }
        return value
    }

    /// Whether text that opens with `<` is XML (`<integer>5</integer>`, `<dict>…`, `<?xml …`), as
    /// `defaults write` takes it, rather than old-style data (`<0fa1 2b>`): a plist element's name
    /// always has a letter no hexadecimal digit has.
    package static func isXMLElement(_ text: String) -> Bool {
        guard let open = text.firstIndex(of: "<") else { return false }
        let after = text[text.index(after: open)...]
        if after.hasPrefix("?") || after.hasPrefix("!") { return true }
        let name = after.prefix { $0.isLetter }
        return name.contains { !$0.isHexDigit }
    }

    /// Parses a whole domain (`write DOMAIN 'PLIST'`, an old-style `import`): XML or old-style
    /// text whose top level is a dictionary, every key exact.
    package static func parseDomain(_ text: String) throws -> [StoreKey: PropertyListValue] {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("<") {
            return try PlistFiles.readXML(Data(text.utf8)).domain()
        }
        var parser = OldStyleParser(text)
        parser.skipWhitespace()
        guard !parser.isAtEnd, parser.characters[parser.position] == "{" else {
            throw CLIError.badInput("expected a dictionary such as '{ key = value; }'")
        }
        let entries = try parser.parseEntries(depth: 0)
        parser.skipWhitespace()
        guard parser.isAtEnd else { throw parser.error("unexpected text after the value") }
        return entries
    }
}

/// A small recursive-descent parser for old-style (OpenStep) plist text, over Unicode scalars as
/// CoreFoundation's is (a combining mark after a quote must not hide the quote), with its
/// comments (`/* … */` and `// …` wherever whitespace may be), its escapes (`\n \t \r \a \b \f
/// \v`, octal `\101`, `\U` and four hex digits, a surrogate pair as one character) and a trailing
/// comma in an array.
private struct OldStyleParser {
    let characters: [Unicode.Scalar]
    var position = 0

    init(_ text: String) { characters = Array(text.unicodeScalars) }

    var isAtEnd: Bool { position >= characters.count }

    func error(_ message: String) -> CLIError {
        .badInput("malformed plist text at character \(position + 1): \(message)")
    }

    /// Skips whitespace and comments.
    mutating func skipWhitespace() {
        while !isAtEnd {
            if characters[position].properties.isWhitespace {
                position += 1
            } else if characters[position] == "/", position + 1 < characters.count,
                characters[position + 1] == "/"
            {
                while !isAtEnd, characters[position] != "\n", characters[position] != "\r" { position += 1 }
            } else if characters[position] == "/", position + 1 < characters.count,
                characters[position + 1] == "*"
            {
                position += 2
                while position + 1 < characters.count,
                    !(characters[position] == "*" && characters[position + 1] == "/")
                {
                    position += 1
                }
                position = min(position + 2, characters.count)
            } else {
                return
            }
        }
    }

    mutating func parseValue(depth: Int = 0) throws -> PropertyListValue {
        skipWhitespace()
        guard !isAtEnd else { throw error("a value is missing") }
        // `depth` containers enclose this value. One more level than a stored value may have is
        // allowed: a whole domain's dictionary holds them.
        if "{(".unicodeScalars.contains(characters[position]), depth > PropertyListValue.maximumNestingDepth {
            throw error("nested too deeply")
        }
        switch characters[position] {
        case "{": return try parseDictionary(depth: depth)
        case "(": return try parseArray(depth: depth)
        case "<": return try parseData()
        case "\"": return .string(try parseQuoted())
        default: return .string(try parseBare())
        }
    }

    mutating func parseDictionary(depth: Int) throws -> PropertyListValue {
        let entries = try parseEntries(depth: depth)
        return .dictionary(
            Dictionary(entries.map { ($0.key.name, $0.value) }, uniquingKeysWith: { _, last in last }))
    }

    /// A `{ key = value; … }` dictionary, its keys exact.
    mutating func parseEntries(depth: Int) throws -> [StoreKey: PropertyListValue] {
        position += 1
        var entries: [StoreKey: PropertyListValue] = [:]
        while true {
            skipWhitespace()
            guard !isAtEnd else { throw error("'}' is missing") }
            if characters[position] == "}" {
                position += 1
                return entries
            }
            let key = characters[position] == "\"" ? try parseQuoted() : try parseBare()
            skipWhitespace()
            guard !isAtEnd, characters[position] == "=" else {
                throw error("'=' expected after the key \"\(key)\"")
            }
            position += 1
            entries[StoreKey(key)] = try parseValue(depth: depth + 1)
            skipWhitespace()
            guard !isAtEnd, characters[position] == ";" else {
                throw error("';' expected after the value of \"\(key)\"")
            }
            position += 1
        }
    }

    mutating func parseArray(depth: Int) throws -> PropertyListValue {
        position += 1
        var elements: [PropertyListValue] = []
        while true {
            skipWhitespace()
            guard !isAtEnd else { throw error("')' is missing") }
            // Empty, or after a trailing comma.
            if characters[position] == ")" {
                position += 1
                return .array(elements)
            }
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard !isAtEnd else { throw error("')' is missing") }
            if characters[position] == ")" {
                position += 1
                return .array(elements)
            }
            guard characters[position] == "," else { throw error("',' or ')' expected") }
            position += 1
        }
    }

    mutating func parseData() throws -> PropertyListValue {
        position += 1
        var hex = ""
        while !isAtEnd, characters[position] != ">" {
            if !characters[position].properties.isWhitespace {
                hex.unicodeScalars.append(characters[position])
            }
            position += 1
        }
        guard !isAtEnd else { throw error("'>' is missing") }
        position += 1
        guard let bytes = Hex.decode(hex) else { throw error("data must be hexadecimal digits in pairs") }
        return .data(bytes)
    }

    mutating func parseQuoted() throws -> String {
        position += 1
        var result = String.UnicodeScalarView()
        while !isAtEnd {
            let character = characters[position]
            position += 1
            if character == "\"" { return String(result) }
            guard character == "\\" else {
                result.append(character)
                continue
            }
            guard !isAtEnd else { break }
            let escaped = characters[position]
            position += 1
            switch escaped {
            case "n": result.append("\n")
            case "t": result.append("\t")
            case "r": result.append("\r")
            case "a": result.append("\u{07}")
            case "b": result.append("\u{08}")
            case "f": result.append("\u{0C}")
            case "v": result.append("\u{0B}")
            case "0"..."7":
                // Up to three octal digits: a byte, which is the character of that code.
                var code = escaped.value - 0x30
                for _ in 0..<2 {
                    guard !isAtEnd, ("0"..."7").contains(characters[position]) else { break }
                    code = code * 8 + characters[position].value - 0x30
                    position += 1
                }
                guard let scalar = Unicode.Scalar(code & 0xFF) else { throw error("a bad octal escape") }
                result.append(scalar)
            case "U", "u":
                let code = try hexCode()
                if (0xD800...0xDBFF).contains(code) {
                    // A high surrogate: the low one follows as another `\U`.
                    guard position + 1 < characters.count, characters[position] == "\\",
                        characters[position + 1] == "U" || characters[position + 1] == "u"
                    else { throw error("a surrogate pair needs its second half") }
                    position += 2
                    let low = try hexCode()
                    guard (0xDC00...0xDFFF).contains(low),
                        let scalar = Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                    else { throw error("a surrogate pair needs its second half") }
                    result.append(scalar)
                } else {
                    guard let scalar = Unicode.Scalar(code) else { throw error("a lone surrogate in \\U") }
                    result.append(scalar)
                }
            default: result.append(escaped)
            }
        }
        throw error("a closing '\"' is missing")
    }

    /// Four hexadecimal digits after `\U`.
    private mutating func hexCode() throws -> UInt32 {
        let end = min(position + 4, characters.count)
        var digits = String.UnicodeScalarView()
        digits.append(contentsOf: characters[position..<end])
        guard digits.count == 4, let code = UInt32(String(digits), radix: 16) else {
            throw error("\\U needs four hexadecimal digits")
        }
        position += 4
        return code
    }

    mutating func parseBare() throws -> String {
        let start = position
        while !isAtEnd, !characters[position].properties.isWhitespace,
            !"{}()<>=;,\"".unicodeScalars.contains(characters[position])
        {
            position += 1
        }
        guard position > start else { throw error("unexpected '\(characters[position])'") }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: characters[start..<position])
        return String(text)
    }
}

enum Hex {
    static func decode(_ text: String) -> Data? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
