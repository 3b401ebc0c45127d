/// A type's name as a Swift developer writes it: `URL?` for `Optional<URL>`, `[String]` for
/// `Array<String>`, `[String: Int]` for `Dictionary<String, Int>`, nested as deep as it goes.
///
/// What `String(describing:)` gives for a generic type is the long form, which `prefs describe`
/// and messages showed; a name it cannot read is given back as it is.
///
/// ```swift
/// swiftSpelling(of: [String: [Int]?].self)  // "[String: [Int]?]"
/// ```
package func swiftSpelling(of type: Any.Type) -> String {
    swiftSpelling(String(describing: type))
}

/// The same for a name already written down (an older release's key description).
///
/// ```swift
/// swiftSpelling("Optional<Array<String>>")  // "[String]?"
/// ```
package func swiftSpelling(_ name: String) -> String {
    var parser = TypeNameParser(text: Array(name.unicodeScalars))
    guard let parsed = parser.parseType(), parser.atEnd else { return name }
    return parsed
}

/// Reads `Name<Argument, …>` (names may be dotted) and writes the sugared form.
private struct TypeNameParser {
    let text: [Unicode.Scalar]
    var index = 0

    var atEnd: Bool {
        var probe = self
        probe.skipSpaces()
        return probe.index == text.count
    }

    mutating func skipSpaces() {
        while index < text.count, text[index] == " " { index += 1 }
    }

    mutating func parseType() -> String? {
        skipSpaces()
        var name = ""
        while index < text.count, !"<>, ".unicodeScalars.contains(text[index]) {
            name.unicodeScalars.append(text[index])
            index += 1
        }
        guard !name.isEmpty else { return nil }
        skipSpaces()
        guard index < text.count, text[index] == "<" else { return name }
        index += 1
        var arguments: [String] = []
        while true {
            guard let argument = parseType() else { return nil }
            arguments.append(argument)
            skipSpaces()
            guard index < text.count else { return nil }
            if text[index] == "," {
                index += 1
                continue
            }
            guard text[index] == ">" else { return nil }
            index += 1
            break
        }
        switch (name, arguments.count) {
        case ("Optional", 1), ("Swift.Optional", 1):
            // A sugared optional of a function type would need parentheses; none is a preference.
            return arguments[0] + "?"
        case ("Array", 1), ("Swift.Array", 1): return "[\(arguments[0])]"
        case ("Dictionary", 2), ("Swift.Dictionary", 2): return "[\(arguments[0]): \(arguments[1])]"
        default: return "\(name)<\(arguments.joined(separator: ", "))>"
        }
    }
}
