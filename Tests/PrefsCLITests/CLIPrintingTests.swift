#if os(macOS) || os(Linux)
    import Foundation
    import Prefs
    import PrefsTestSupport
    import PrefsTool
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does", items 1 and 2: what
    /// `prefs read` prints reads back as the same value in Foundation's (CoreFoundation's)
    /// old-style parser and in `prefs write`'s own, for strings from the whole of Unicode.
    @Suite struct CLIPrintingTests {
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
