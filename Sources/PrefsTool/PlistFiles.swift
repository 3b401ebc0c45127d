import Foundation
import Prefs
import PrefsSupport

/// Reading and writing the XML and JSON files of `export` and `import` with the tool's own code,
/// so that a domain's keys stay exact: Foundation's readers and writers on Linux merge keys that
/// are canonically equivalent (`"é"` as one scalar or two), and a domain may hold both.
enum PlistFiles {
    // MARK: - Writing XML

    /// A domain as an XML property list, keys sorted by Unicode scalars.
    static func xml(_ entries: [StoreKey: PropertyListValue]) -> Data {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        writeDictionary(entries.map { ($0.key.name, $0.value) }, indent: "", into: &text)
        text += "</plist>\n"
        return Data(text.utf8)
    }

    private static func writeDictionary(
        _ pairs: [(String, PropertyListValue)], indent: String, into text: inout String
    ) {
        guard !pairs.isEmpty else {
            text += "\(indent)<dict/>\n"
            return
        }
        text += "\(indent)<dict>\n"
        for (key, value) in pairs.sorted(by: { StoreKey($0.0) < StoreKey($1.0) }) {
            text += "\(indent)\t<key>\(escaped(key))</key>\n"
            write(value, indent: indent + "\t", into: &text)
        }
        text += "\(indent)</dict>\n"
    }

    private static func write(_ value: PropertyListValue, indent: String, into text: inout String) {
        switch value {
        case .bool(let flag): text += "\(indent)<\(flag ? "true" : "false")/>\n"
        case .integer(let number): text += "\(indent)<integer>\(number)</integer>\n"
        case .unsignedInteger(let number): text += "\(indent)<integer>\(number)</integer>\n"
        case .double(let real): text += "\(indent)<real>\(xmlReal(real))</real>\n"
        case .string(let string): text += "\(indent)<string>\(escaped(string))</string>\n"
        case .date(let date): text += "\(indent)<date>\(CalendarDate.iso8601(date))</date>\n"
        case .data(let bytes): text += "\(indent)<data>\(bytes.base64EncodedString())</data>\n"
        case .array(let elements):
            guard !elements.isEmpty else {
                text += "\(indent)<array/>\n"
                return
            }
            text += "\(indent)<array>\n"
            for element in elements { write(element, indent: indent + "\t", into: &text) }
            text += "\(indent)</array>\n"
        case .dictionary(let entries):
            writeDictionary(entries.map { ($0.key, $0.value) }, indent: indent, into: &text)
        }
    }

    private static func xmlReal(_ real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        return "\(real)"
    }

    private static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: - Reading

    /// A value as read from a file: dictionaries keep every key exactly, in file order, so the
    /// top level can become a domain without merging anything.
    indirect enum Parsed {
        case value(PropertyListValue)
        case array([Parsed])
        case dictionary([(String, Parsed)])

        /// The value, nested dictionaries as ``PropertyListValue`` dictionaries.
        var value: PropertyListValue {
            switch self {
            case .value(let value): value
            case .array(let elements): .array(elements.map(\.value))
            case .dictionary(let pairs):
                .dictionary(
                    Dictionary(pairs.map { ($0.0, $0.1.value) }, uniquingKeysWith: { _, last in last }))
            }
        }

        /// The top-level dictionary as a domain, every key exact.
        func domain() throws -> [StoreKey: PropertyListValue] {
            guard case .dictionary(let pairs) = self else {
                throw CLIError.badInput("the property list is not a dictionary")
            }
            var entries: [StoreKey: PropertyListValue] = [:]
            for (key, value) in pairs { entries[StoreKey(key)] = value.value }
            return entries
        }
    }

    /// Reads an XML property list with the tool's own small parser: no DTD, no entities but the
    /// five predefined ones and character references (so nothing expands), nesting bounded.
    static func readXML(_ data: Data) throws -> Parsed {
        var reader = XMLReader(bytes: [UInt8](data))
        return try reader.document()
    }

    /// Reads JSON: integers as integers, other numbers as reals; `null` has no property-list form.
    static func readJSON(_ data: Data) throws -> Parsed {
        var reader = JSONReader(bytes: [UInt8](data))
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.isAtEnd else { throw reader.error("unexpected text after the value") }
        return value
    }
}

/// A reader for the XML property-list format.
private struct XMLReader {
    let bytes: [UInt8]
    var position = 0

    func error(_ message: String) -> CLIError {
        .badInput("malformed XML property list at byte \(position + 1): \(message)")
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func skipWhitespace() {
        while !isAtEnd, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    func starts(with text: String) -> Bool {
        bytes[position...].starts(with: text.utf8)
    }

    /// Skips `<?…?>`, `<!DOCTYPE …>` and comments.
    mutating func skipMarkup() throws {
        while true {
            skipWhitespace()
            if starts(with: "<?") {
                try skip(past: "?>")
            } else if starts(with: "<!--") {
                try skip(past: "-->")
            } else if starts(with: "<!DOCTYPE") {
                // The plist DOCTYPE names an external DTD; an internal subset (`[`) could
                // declare entities, which this reader does not expand: refuse it.
                guard let end = bytes[position...].firstIndex(of: UInt8(ascii: ">")) else {
                    throw error("unterminated DOCTYPE")
                }
                if bytes[position..<end].contains(UInt8(ascii: "[")) {
                    throw error("a DOCTYPE with declarations is not supported")
                }
                position = end + 1
            } else {
                return
            }
        }
    }

    mutating func skip(past terminator: String) throws {
        let pattern = Array(terminator.utf8)
        while !isAtEnd {
            if bytes[position...].starts(with: pattern) {
                position += pattern.count
                return
            }
            position += 1
        }
        throw error("'\(terminator)' is missing")
    }

    /// A tag: its name, whether it closes (`</x>`) and whether it is empty (`<x/>`).
    mutating func tag() throws -> (name: String, closing: Bool, empty: Bool) {
        try skipMarkup()
        guard !isAtEnd, bytes[position] == UInt8(ascii: "<") else { throw error("a tag is expected") }
        guard let end = bytes[position...].firstIndex(of: UInt8(ascii: ">")) else {
            throw error("'>' is missing")
        }
        var inside = bytes[(position + 1)..<end]
        position = end + 1
        let closing = inside.first == UInt8(ascii: "/")
        if closing { inside = inside.dropFirst() }
        let empty = inside.last == UInt8(ascii: "/")
        if empty { inside = inside.dropLast() }
        let name = inside.prefix { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return (String(decoding: name, as: UTF8.self), closing, empty)
    }

    mutating func document() throws -> PlistFiles.Parsed {
        let first = try tag()
        if first.name == "plist" && !first.closing {
            guard !first.empty else { throw error("an empty <plist/>") }
            let value = try value(opening: try tag(), depth: 0)
            let close = try tag()
            guard close.name == "plist", close.closing else { throw error("</plist> is missing") }
            try skipMarkup()
            guard isAtEnd else { throw error("unexpected text after </plist>") }
            return value
        }
        let value = try value(opening: first, depth: 0)
        try skipMarkup()
        guard isAtEnd else { throw error("unexpected text after the value") }
        return value
    }

    mutating func value(opening: (name: String, closing: Bool, empty: Bool), depth: Int) throws
        -> PlistFiles.Parsed
    {
        guard !opening.closing else { throw error("unexpected </\(opening.name)>") }
        switch opening.name {
        case "dict":
            guard depth <= PropertyListValue.maximumNestingDepth else { throw error("nested too deeply") }
            var pairs: [(String, PlistFiles.Parsed)] = []
            if opening.empty { return .dictionary(pairs) }
            while true {
                let next = try tag()
                if next.name == "dict" && next.closing { return .dictionary(pairs) }
                guard next.name == "key", !next.closing else { throw error("<key> expected in <dict>") }
                let key = next.empty ? "" : try text(closing: "key")
                pairs.append((key, try value(opening: try tag(), depth: depth + 1)))
            }
        case "array":
            guard depth <= PropertyListValue.maximumNestingDepth else { throw error("nested too deeply") }
            var elements: [PlistFiles.Parsed] = []
            if opening.empty { return .array(elements) }
            while true {
                let next = try tag()
                if next.name == "array" && next.closing { return .array(elements) }
                elements.append(try value(opening: next, depth: depth + 1))
            }
        case "true", "false":
            if !opening.empty {
                let close = try tag()
                guard close.name == opening.name, close.closing else {
                    throw error("</\(opening.name)> expected")
                }
            }
            return .value(.bool(opening.name == "true"))
        case "string":
            return .value(.string(opening.empty ? "" : try text(closing: "string")))
        case "integer":
            let raw = try text(closing: "integer").trimmingCharacters(in: .whitespacesAndNewlines)
            if let number = Int64(raw) ?? parseHex(raw) { return .value(.integer(number)) }
            // Property lists hold unsigned 64-bit integers too.
            guard let unsigned = UInt64(raw) else { throw error("not an integer: \(raw)") }
            return .value(.unsignedInteger(unsigned))
        case "real":
            let raw = try text(closing: "real").trimmingCharacters(in: .whitespacesAndNewlines)
            let special: [String: Double] = [
                "nan": .nan, "+infinity": .infinity, "infinity": .infinity, "inf": .infinity,
                "-infinity": -.infinity, "-inf": -.infinity,
            ]
            guard let real = special[raw.lowercased()] ?? Double(raw) else {
                throw error("not a real: \(raw)")
            }
            return .value(.double(real))
        case "date":
            let raw = try text(closing: "date").trimmingCharacters(in: .whitespacesAndNewlines)
            guard let date = CalendarDate.parse(raw) else { throw error("not a date: \(raw)") }
            return .value(.date(date))
        case "data":
            let raw = opening.empty ? "" : try text(closing: "data")
            guard let data = Data(base64Encoded: raw.filter { !$0.isWhitespace }) else {
                throw error("not base64 data")
            }
            return .value(.data(data))
        default:
            throw error("unknown element <\(opening.name)>")
        }
    }

    private func parseHex(_ raw: String) -> Int64? {
        let negative = raw.hasPrefix("-")
        let digits = raw.dropFirst(negative ? 1 : 0)
        guard digits.lowercased().hasPrefix("0x"), let magnitude = UInt64(digits.dropFirst(2), radix: 16)
        else { return nil }
        return negative ? Int64(exactly: magnitude).map { -$0 } : Int64(bitPattern: magnitude)
    }

    /// The character data up to `</name>`, with entities and CDATA decoded.
    mutating func text(closing name: String) throws -> String {
        var result: [UInt8] = []
        while true {
            guard !isAtEnd else { throw error("</\(name)> is missing") }
            if starts(with: "<![CDATA[") {
                position += 9
                let start = position
                try skip(past: "]]>")
                result += bytes[start..<(position - 3)]
            } else if starts(with: "<!--") {
                try skip(past: "-->")
            } else if bytes[position] == UInt8(ascii: "<") {
                let close = try tag()
                guard close.name == name, close.closing else { throw error("</\(name)> expected") }
                guard let text = String(validatingUTF8Bytes: result) else {
                    throw error("text that is not UTF-8")
                }
                return text
            } else if bytes[position] == UInt8(ascii: "&") {
                result += Array(try entity().utf8)
            } else {
                result.append(bytes[position])
                position += 1
            }
        }
    }

    mutating func entity() throws -> String {
        guard let end = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw error("an unterminated '&' entity")
        }
        let name = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        position = end + 1
        switch name {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default:
            let number: UInt32? =
                name.hasPrefix("#x")
                ? UInt32(name.dropFirst(2), radix: 16)
                : name.hasPrefix("#") ? UInt32(name.dropFirst(), radix: 10) : nil
            guard let number, let scalar = Unicode.Scalar(number) else {
                throw error("unknown entity &\(name);")
            }
            return String(Character(scalar))
        }
    }
}

/// A reader for JSON documents.
private struct JSONReader {
    let bytes: [UInt8]
    var position = 0

    var isAtEnd: Bool { position >= bytes.count }

    func error(_ message: String) -> CLIError {
        .badInput("malformed JSON at byte \(position + 1): \(message)")
    }

    mutating func skipWhitespace() {
        while !isAtEnd, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func expect(_ literal: String) throws {
        guard bytes[position...].starts(with: literal.utf8) else { throw error("'\(literal)' expected") }
        position += literal.utf8.count
    }

    mutating func value(depth: Int) throws -> PlistFiles.Parsed {
        skipWhitespace()
        guard !isAtEnd else { throw error("a value is missing") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            guard depth <= PropertyListValue.maximumNestingDepth else { throw error("nested too deeply") }
            position += 1
            var pairs: [(String, PlistFiles.Parsed)] = []
            skipWhitespace()
            if !isAtEnd, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .dictionary(pairs)
            }
            while true {
                skipWhitespace()
                let key = try string()
                skipWhitespace()
                try expect(":")
                pairs.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard !isAtEnd else { throw error("'}' is missing") }
                if bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .dictionary(pairs)
                }
                try expect(",")
            }
        case UInt8(ascii: "["):
            guard depth <= PropertyListValue.maximumNestingDepth else { throw error("nested too deeply") }
            position += 1
            var elements: [PlistFiles.Parsed] = []
            skipWhitespace()
            if !isAtEnd, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard !isAtEnd else { throw error("']' is missing") }
                if bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .array(elements)
                }
                try expect(",")
            }
        case UInt8(ascii: "\""):
            return .value(.string(try string()))
        case UInt8(ascii: "t"):
            try expect("true")
            return .value(.bool(true))
        case UInt8(ascii: "f"):
            try expect("false")
            return .value(.bool(false))
        case UInt8(ascii: "n"):
            throw error("null has no property-list form")
        default:
            return .value(try number())
        }
    }

    mutating func number() throws -> PropertyListValue {
        let start = position
        while !isAtEnd, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if let integer = Int64(text) { return .integer(integer) }
        if let unsigned = UInt64(text) { return .unsignedInteger(unsigned) }
        guard !text.isEmpty, let real = Double(text), real.isFinite else {
            throw error("not a number: '\(text)'")
        }
        return .double(real)
    }

    mutating func string() throws -> String {
        try expect("\"")
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() throws {
            guard let text = String(validatingUTF8Bytes: raw) else {
                throw error("text that is not UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
            raw.removeAll()
        }
        while true {
            guard !isAtEnd else { throw error("an unterminated string") }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                try flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush()
                guard !isAtEnd else { throw error("an unterminated escape") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                case UInt8(ascii: "u"):
                    var unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit), bytes[position...].starts(with: "\\u".utf8) {
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("an unpaired surrogate") }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(unit) else { throw error("an unpaired surrogate") }
                    scalars.append(scalar)
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    scalars.append(Unicode.Scalar(escape))
                default:
                    throw error("unknown escape '\\\(Character(Unicode.Scalar(escape)))'")
                }
            default:
                raw.append(byte)
            }
        }
    }

    mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count,
            let value = UInt32(String(decoding: bytes[position..<(position + 4)], as: UTF8.self), radix: 16)
        else { throw error("\\u needs four hex digits") }
        position += 4
        return value
    }
}

extension PlistFiles {
    /// Reads a binary property list (`bplist00`) with the tool's own reader: keys exact, every
    /// offset and count checked, cycles refused, and shared objects counted as many times as they
    /// appear, so a small file cannot stand for an enormous value.
    static func readBinary(_ data: Data) throws -> Parsed {
        var reader = try BinaryPlistReader(bytes: [UInt8](data))
        return try reader.object(reader.topObject, depth: 0)
    }
}

/// A reader for Apple's binary property-list format, version 00.
private struct BinaryPlistReader {
    let bytes: [UInt8]
    let offsets: [Int]
    let referenceSize: Int
    let topObject: Int
    /// Decoded objects by index, with how many values each stands for once expanded.
    var decoded: [Int: (value: PlistFiles.Parsed, size: Int)] = [:]
    var inProgress = Set<Int>()

    /// The most values a file may expand to (shared objects counted each time they appear).
    static let maximumExpandedValues = 5_000_000

    func error(_ message: String) -> CLIError { .badInput("malformed binary property list: \(message)") }

    init(bytes: [UInt8]) throws {
        self.bytes = bytes
        guard bytes.count >= 8 + 32, bytes.starts(with: Array("bplist00".utf8)) else {
            throw CLIError.badInput("malformed binary property list: too short or not version 00")
        }
        let trailer = bytes.count - 32
        func number(_ start: Int, _ size: Int) -> Int? {
            let value = bytes[start..<(start + size)].reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
            return Int(exactly: value)
        }
        let offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            let count = number(trailer + 8, 8), let top = number(trailer + 16, 8),
            let table = number(trailer + 24, 8), count > 0, top < count, table >= 8,
            count <= (trailer - table) / offsetSize
        else { throw CLIError.badInput("malformed binary property list: a damaged trailer") }
        topObject = top
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for index in 0..<count {
            guard let offset = number(table + index * offsetSize, offsetSize), offset >= 8, offset < table
            else {
                throw CLIError.badInput("malformed binary property list: an object offset outside the file")
            }
            offsets.append(offset)
        }
        self.offsets = offsets
    }

    mutating func object(_ index: Int, depth: Int) throws -> PlistFiles.Parsed {
        try sizedObject(index, depth: depth).value
    }

    /// The object at `index` with how many values it expands to, decoded once (a reference
    /// used twice is decoded once; one that contains itself, or nests too deeply, is an error).
    private mutating func sizedObject(_ index: Int, depth: Int) throws -> (
        value: PlistFiles.Parsed, size: Int
    ) {
        if let done = decoded[index] { return done }
        guard index < offsets.count else { throw error("a reference to object \(index) of \(offsets.count)") }
        guard !inProgress.contains(index) else { throw error("an object that contains itself") }
        guard depth <= PropertyListValue.maximumNestingDepth else { throw error("nested too deeply") }
        inProgress.insert(index)
        defer { inProgress.remove(index) }
        var position = offsets[index]
        let marker = try byte(&position)
        let result: (PlistFiles.Parsed, Int)
        switch marker >> 4 {
        case 0xA: result = try array(&position, marker: marker, depth: depth)
        case 0xD: result = try dictionary(&position, marker: marker, depth: depth)
        default: result = (.value(try scalar(&position, marker: marker)), 1)
        }
        decoded[index] = result
        return result
    }

    /// A value that holds no references: a boolean, number, date, data or string.
    private mutating func scalar(_ position: inout Int, marker: UInt8) throws -> PropertyListValue {
        switch marker >> 4 {
        case 0x0 where marker == 0x08: return .bool(false)
        case 0x0 where marker == 0x09: return .bool(true)
        case 0x1: return try integerValue(&position, sizeExponent: Int(marker & 0x0F))
        case 0x2:
            let size = 1 << Int(marker & 0x0F)
            let bits = try fixed(&position, size)
            switch size {
            case 4: return .double(Double(Float(bitPattern: UInt32(bits))))
            case 8: return .double(Double(bitPattern: bits))
            default: throw error("a real of \(size) bytes")
            }
        case 0x3:
            guard marker == 0x33 else { throw error("a date marker \(marker)") }
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed(&position, 8))))
        case 0x4: return .data(Data(try take(&position, try length(&position, marker))))
        case 0x5:
            let raw = try take(&position, try length(&position, marker))
            guard raw.allSatisfy({ $0 < 0x80 }) else { throw error("an ASCII string with a byte over 127") }
            return .string(String(decoding: raw, as: UTF8.self))
        case 0x6: return .string(try utf16String(&position, marker: marker))
        default: throw error("an object of a type property lists do not have (marker \(marker))")
        }
    }

    /// A big-endian UTF-16 string, whose surrogates must pair.
    private mutating func utf16String(_ position: inout Int, marker: UInt8) throws -> String {
        let count = try length(&position, marker)
        guard count <= (bytes.count - position) / 2 else { throw error("a string past the end") }
        let raw = try take(&position, count * 2)
        let units = stride(from: raw.startIndex, to: raw.endIndex, by: 2).map {
            UInt16(raw[$0]) << 8 | UInt16(raw[$0 + 1])
        }
        var text = String.UnicodeScalarView()
        var iterator = units.makeIterator()
        var decoder = UTF16()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.append(scalar)
            case .emptyInput: return String(text)
            case .error: throw error("a UTF-16 string with an unpaired surrogate")
            }
        }
    }

    private mutating func array(_ position: inout Int, marker: UInt8, depth: Int) throws -> (
        PlistFiles.Parsed, Int
    ) {
        let references = try references(&position, try length(&position, marker))
        var elements: [PlistFiles.Parsed] = []
        var size = 1
        for reference in references {
            let element = try sizedObject(reference, depth: depth + 1)
            elements.append(element.value)
            size += element.size
            try checkSize(size)
        }
        return (.array(elements), size)
    }

    private mutating func dictionary(_ position: inout Int, marker: UInt8, depth: Int) throws -> (
        PlistFiles.Parsed, Int
    ) {
        let count = try length(&position, marker)
        let keys = try references(&position, count)
        let values = try references(&position, count)
        var pairs: [(String, PlistFiles.Parsed)] = []
        var size = 1
        for (keyIndex, valueIndex) in zip(keys, values) {
            guard case .value(.string(let key)) = try object(keyIndex, depth: depth + 1) else {
                throw error("a dictionary key that is not a string")
            }
            let value = try sizedObject(valueIndex, depth: depth + 1)
            pairs.append((key, value.value))
            size += 1 + value.size
            try checkSize(size)
        }
        return (.dictionary(pairs), size)
    }

    private func checkSize(_ size: Int) throws {
        guard size <= Self.maximumExpandedValues else {
            throw error("more than \(Self.maximumExpandedValues) values once shared objects are expanded")
        }
    }

    private func byte(_ position: inout Int) throws -> UInt8 {
        guard position < bytes.count - 32 else { throw error("an object past the end") }
        defer { position += 1 }
        return bytes[position]
    }

    private func take(_ position: inout Int, _ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - 32 - position else { throw error("an object past the end") }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    private func fixed(_ position: inout Int, _ size: Int) throws -> UInt64 {
        try take(&position, size).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
    }

    /// An integer object: as ``integer(_:sizeExponent:)``, and a 16-byte one whose high half is
    /// zero above `Int64.max` is the unsigned 64-bit integer it holds (how Foundation writes them).
    private func integerValue(_ position: inout Int, sizeExponent: Int) throws -> PropertyListValue {
        if sizeExponent == 4 {
            let high = try fixed(&position, 8)
            let low = try fixed(&position, 8)
            if high == 0 { return .integer(unsigned: low) }
            guard high == UInt64.max, Int64(bitPattern: low) < 0 else {
                throw error("an integer beyond 64 bits")
            }
            return .integer(Int64(bitPattern: low))
        }
        return .integer(try integer(&position, sizeExponent: sizeExponent))
    }

    /// An integer of 2^exponent bytes: 1, 2 and 4 are unsigned, 8 signed; 16 keeps its low 8
    /// bytes when the high ones only extend the sign.
    private func integer(_ position: inout Int, sizeExponent: Int) throws -> Int64 {
        switch sizeExponent {
        case 0, 1, 2: return Int64(try fixed(&position, 1 << sizeExponent))
        case 3: return Int64(bitPattern: try fixed(&position, 8))
        case 4:
            let high = try fixed(&position, 8)
            let low = Int64(bitPattern: try fixed(&position, 8))
            guard high == 0 && low >= 0 || high == UInt64.max && low < 0 else {
                throw error("an integer beyond 64 bits")
            }
            return low
        default: throw error("an integer of \(1 << sizeExponent) bytes")
        }
    }

    /// A count: in the marker's low nibble, or (0xF) in the integer object that follows.
    private func length(_ position: inout Int, _ marker: UInt8) throws -> Int {
        guard marker & 0x0F == 0x0F else { return Int(marker & 0x0F) }
        let next = try byte(&position)
        guard next >> 4 == 0x1 else { throw error("a count that is not an integer") }
        let count = try integer(&position, sizeExponent: Int(next & 0x0F))
        guard count >= 0, count <= bytes.count else { throw error("a count larger than the file") }
        return Int(truncatingIfNeeded: count)  // at most `bytes.count`, checked above
    }

    private func references(_ position: inout Int, _ count: Int) throws -> [Int] {
        guard count <= (bytes.count - 32 - position) / referenceSize else {
            throw error("references past the end")
        }
        return try (0..<count).map { _ in
            // A reference of up to 8 bytes may exceed `Int`: an error, never a trap.
            guard let reference = Int(exactly: try fixed(&position, referenceSize)) else {
                throw error("a reference beyond any object")
            }
            return reference
        }
    }
}
