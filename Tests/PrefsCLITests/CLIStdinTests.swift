#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// `prefs --stdin write DOMAIN KEY`: the value comes from standard input, never the command
    /// line (where `ps` shows it to every user of the machine), and is the text itself.
    @Suite struct CLIStdinTests {
        @Test func theTextIsTheValueNeverAFlagOrPlistText() throws {
            let cli = try CLI()
            defer { cli.remove() }
            for text in ["-int", "a=b; c", "(1, 2)", "two\nlines"] {
                let written = try cli.run(
                    ["--stdin", "write", "com.example.app", "token"], input: Data((text + "\n").utf8))
                #expect(written.status == 0, "\(written.stderr)")
                #expect(try cli.run("read-type", "com.example.app", "token").stdout == "Type is string")
                let read = try cli.run("--json", "read", "com.example.app", "token")
                let decoded = try JSONDecoder().decode(String.self, from: Data(read.stdout.utf8))
                #expect(decoded == text, "one final line break dropped, nothing else")
            }
        }

        @Test func aDeclaredKeyTakesItsDeclaredType() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let path = cli.home.appendingPathComponent("config/prefs/com.example.typed.sqlite").path
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            #expect(try cli.run("typed-keys", path, program: "PrefsTestHelper").status == 0)

            let written = try cli.run(
                ["--stdin", "write", "com.example.typed", "count"], input: Data("42".utf8))
            #expect(written.status == 0, "\(written.stderr)")
            #expect(try cli.run("read-type", "com.example.typed", "count").stdout == "Type is integer")
            #expect(try cli.run("typed-keys", path, "count", program: "PrefsTestHelper").stdout == "42")

            let refused = try cli.run(
                ["--stdin", "write", "com.example.typed", "count"], input: Data("many".utf8))
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("expected an integer, got 'many'"), "\(refused.stderr)")
            #expect(try cli.run("read", "com.example.typed", "count").stdout == "42", "nothing was written")
        }

        struct Refused: Sendable, CustomTestStringConvertible {
            let arguments: [String]
            let input: Data
            let status: Int32
            let says: String
            var testDescription: String { says }
        }

        static let refusals: [Refused] = [
            Refused(
                arguments: ["--stdin", "write", "com.example.app", "token"], input: Data("\n".utf8),
                status: 64,
                says: "standard input was empty; nothing was written"),
            Refused(
                arguments: ["--stdin", "write", "com.example.app", "token"], input: Data([0xff, 0xfe, 0x41]),
                status: 64, says: "standard input is not UTF-8 text; nothing was written"),
            Refused(
                arguments: ["--stdin", "write", "com.example.app", "token", "visible"], input: Data("x".utf8),
                status: 64, says: "--stdin is for write DOMAIN KEY"),
            Refused(
                arguments: ["--stdin", "read", "com.example.app", "token"], input: Data("x".utf8), status: 64,
                says: "--stdin is for write DOMAIN KEY"),
            // After the command it was a domain named "--stdin" (written, exit 0) or an unknown flag.
            Refused(
                arguments: ["write", "--stdin", "com.example.app", "token"], input: Data("x".utf8),
                status: 64,
                says: "--stdin is an option of prefs itself: it goes before the command"),
            Refused(
                arguments: ["write", "com.example.app", "token", "--stdin"], input: Data("x".utf8),
                status: 64,
                says: "--stdin is an option of prefs itself: it goes before the command"),
        ]

        @Test(arguments: refusals)
        func whatItCannotTakeIsRefusedAndNothingChanges(_ refusal: Refused) throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "com.example.app", "token", "kept").status == 0)
            let before = try cli.everything()
            let result = try cli.run(refusal.arguments, input: refusal.input)
            #expect(result.status == refusal.status)
            #expect(result.stderr.contains(refusal.says), "\(result.stderr)")
            #expect(try cli.everything() == before)
        }
    }
#endif
