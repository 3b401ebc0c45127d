#if os(macOS) || os(Linux)
    import Foundation
    import Prefs
    import PrefsTestSupport
    import PrefsTool
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does", items 1 and 2: what
    /// `prefs read` prints reads back as the same value in Foundation's (CoreFoundation's)
    /// old-style parser and in `prefs write`'s own, for strings from the whole of Unicode.
    @Suite(.timeLimit(.minutes(10))) struct CLIPrintingTests {
        /// Pieces strings are made of: punctuation a plist reader gives meaning to, comment
        /// openers, escapes, whitespace and controls, combining marks (after a quote too),
        /// letters of several scripts, and characters beyond the Basic Multilingual Plane.
        static let pieces: [String] = [
            "a", "Z", "0", "9", "_", "$", "+", "/", ":", ".", "-", "//", "/*", "*/", "\"", "\\", "'", "=",
            ";",
            ",", "{", "}", "(", ")", "<", ">", " ", "  ", "\t", "\n", "\r", "\u{0}", "\u{1}", "\u{7F}",
            "\u{301}", "\"\u{301}", "é", "e\u{301}", "中文", "🌍", "👩‍👩‍👧", "\u{FEFF}", "\u{2028}", "\u{10FFFF}",
            "\\U", "\\n", "%", "#", "@", "!", "?", "&", "|", "~", "^", "`", "[", "]",
        ]

        static func randomString(_ random: inout SeededGenerator) -> String {
            let count = Int(random.next() % 6)
            return (0..<count).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
        }

        private func sameScalars(_ a: String?, _ b: String) -> Bool {
            guard let a else { return false }
            return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        }

        @Test(arguments: [1, 2, 3] as [UInt64])
        func printedStringsReadBackTheSame(seed: UInt64) throws {
            var random = SeededGenerator(state: seed)
            for _ in 0..<400 {
                let text = Self.randomString(&random)
                let key = Self.randomString(&random) + "k"
                let value = PropertyListValue.dictionary([
                    key: .array([.string(text), .data(Data([0, 255]))])
                ])
                let printed = PlistText.oldStyle(value)
                // Foundation's old-style (OpenStep) parser, CoreFoundation's grammar.
                let parsed = try PropertyListSerialization.propertyList(from: Data(printed.utf8), format: nil)
                let dictionary = try #require(parsed as? [String: Any], "\(printed)")
                let foundKey = try #require(dictionary.keys.first)
                #expect(sameScalars(foundKey, key), "key \(String(reflecting: key)) printed as \(printed)")
                let array = try #require(dictionary[foundKey] as? [Any], "\(printed)")
                #expect(
                    sameScalars(array.first as? String, text),
                    "\(String(reflecting: text)) printed as \(printed)")
                // `prefs write`'s own parser.
                #expect(
                    try PlistText.parse(printed) == value, "\(String(reflecting: text)) printed as \(printed)"
                )
                // A string printed alone (as `prefs read` prints a dictionary's value).
                let alone = PlistText.oldStyle(.string(text))
                let wrapped = try PropertyListSerialization.propertyList(
                    from: Data("(\(alone))".utf8), format: nil)
                #expect(sameScalars((wrapped as? [Any])?.first as? String, text), "\(alone)")
            }
        }

        /// A string of pieces, or of scalars drawn from the whole of Unicode (no surrogates).
        static func anyString(_ random: inout SeededGenerator) -> String {
            guard random.next() % 2 == 0 else { return randomString(&random) }
            var text = String.UnicodeScalarView()
            for _ in 0..<(random.next() % 5) {
                let value = UInt32(random.next() % 0x11_0000)
                if let scalar = Unicode.Scalar(value) { text.append(scalar) }
            }
            return String(text)
        }

        /// A value of any kind, containers nested up to `depth` levels.
        static func randomValue(_ random: inout SeededGenerator, depth: Int) -> PropertyListValue {
            let kinds: UInt64 = depth > 0 ? 10 : 8
            switch random.next() % kinds {
            case 0: return .bool(random.next() % 2 == 0)
            case 1: return .integer(Int64(bitPattern: random.next()) >> (random.next() % 64))
            case 2: return .unsignedInteger(random.next())
            case 3:
                let special: [Double] = [0, -0.0, 1e20, -1.5e-300, .infinity, .pi, 0.1]
                return .double(
                    random.next() % 2 == 0
                        ? special[Int(random.next() % UInt64(special.count))]
                        : Double(bitPattern: random.next() & ~(0x7FF << 52)) * 1e10)
            case 4:
                return .date(
                    Date(
                        timeIntervalSinceReferenceDate: Double(
                            Int64(random.next() % 600_000_000_000) - 300_000_000_000)))
            case 5:
                return .data(
                    Data((0..<(random.next() % 4)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            case 6, 7: return .string(anyString(&random))
            case 8:
                return .array((0..<(random.next() % 4)).map { _ in randomValue(&random, depth: depth - 1) })
            default:
                var entries: [String: PropertyListValue] = [:]
                for _ in 0..<(random.next() % 4) {
                    entries[anyString(&random)] = randomValue(&random, depth: depth - 1)
                }
                return .dictionary(entries)
            }
        }

        /// What old-style text holds of a value: numbers, booleans and dates as the strings
        /// `prefs read` prints for them, data and containers as they are.
        static func textImage(_ value: PropertyListValue) -> PropertyListValue {
            switch value {
            case .string, .data: value
            case .array(let elements): .array(elements.map(textImage))
            case .dictionary(let entries): .dictionary(entries.mapValues(textImage))
            case .bool, .integer, .unsignedInteger, .double, .date: .string(PlistText.bare(value))
            }
        }

        /// Foundation's parse of old-style text as a value: strings, data, arrays, dictionaries.
        static func fromFoundation(_ object: Any) -> PropertyListValue? {
            switch object {
            case let text as String: return .string(text)
            case let bytes as Data: return .data(bytes)
            case let elements as [Any]:
                let values = elements.compactMap(fromFoundation)
                return values.count == elements.count ? .array(values) : nil
            case let entries as [String: Any]:
                let values = entries.compactMapValues(fromFoundation)
                return values.count == entries.count ? .dictionary(values) : nil
            default: return nil
            }
        }

        /// Every kind of value, nested: what `prefs read` prints of it is read back by Foundation's
        /// parser and by `prefs write`'s as the same text image, scalar by scalar.
        @Test(arguments: [11, 12, 13] as [UInt64])
        func printedValuesOfEveryKindReadBackTheSame(seed: UInt64) throws {
            var random = SeededGenerator(state: seed)
            for _ in 0..<300 {
                // A scalar alone prints as its bare text, not as plist text: hold it in an array.
                var value = Self.randomValue(&random, depth: 3)
                switch value {
                case .array, .dictionary: break
                default: value = .array([value])
                }
                let image = Self.scalarExact(Self.textImage(value))
                let printed = PlistText.bare(value)
                let parsed = try PropertyListSerialization.propertyList(from: Data(printed.utf8), format: nil)
                #expect(Self.fromFoundation(parsed).map(Self.scalarExact) == image, "\(printed)")
                #expect(Self.scalarExact(try PlistText.parse(printed)) == image, "\(printed)")
            }
        }

        /// A value with every string spelled out as its Unicode scalars, so that two strings
        /// Swift calls equal (canonically equivalent) but that differ in their scalars differ here.
        static func scalarExact(_ value: PropertyListValue) -> String {
            switch value {
            case .string(let text):
                return "s" + text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: ".")
            case .array(let elements): return "(" + elements.map(scalarExact).joined(separator: ",") + ")"
            case .dictionary(let entries):
                return "{"
                    + entries.map { scalarExact(.string($0.key)) + "=" + scalarExact($0.value) }.sorted()
                    .joined(separator: ";") + "}"
            default: return "\(value)"
            }
        }

        @Test func stringsCoreFoundationWouldMisreadAreQuoted() {
            #expect(PlistText.oldStyle(.string("//k")) == "\"//k\"")
            #expect(PlistText.oldStyle(.string("a+b")) == "\"a+b\"")
            #expect(PlistText.oldStyle(.string("a/*b")) == "\"a/*b\"")
            #expect(PlistText.oldStyle(.string("path/to:file.txt-1_$")) == "path/to:file.txt-1_$")
        }

        @Test func coreFoundationsGrammarIsRead() throws {
            let text = """
                ( /* a comment */ "\\101\\a\\b\\f\\v" , // a line comment
                  "\\UD83D\\UDE00", plain , )
                """
            #expect(
                try PlistText.parse(text)
                    == .array([.string("A\u{07}\u{08}\u{0C}\u{0B}"), .string("😀"), .string("plain")]))
            #expect(
                try PlistText.parse("{ a = 1; /* between */ b = (x, y,); }")
                    == .dictionary([
                        "a": .string("1"), "b": .array([.string("x"), .string("y")]),
                    ]))
        }
    }
#endif
