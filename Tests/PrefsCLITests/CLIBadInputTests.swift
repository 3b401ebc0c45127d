#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Bad input: one clear line on stderr, a non-zero exit, and the store exactly as before.
    @Suite struct CLIBadInputTests {
        struct BadInput: Sendable, CustomTestStringConvertible {
            let arguments: [String]
            let status: Int32
            let message: String
            var testDescription: String { arguments.joined(separator: " ") }
        }

        static let cases: [BadInput] = [
            BadInput(arguments: ["frobnicate"], status: 64, message: "unknown command 'frobnicate'"),
            BadInput(arguments: ["--colour", "read"], status: 64, message: "unknown option '--colour'"),
            BadInput(
                arguments: ["--store", "nonsense", "read"], status: 64, message: "unknown store 'nonsense'"),
            BadInput(arguments: ["--store"], status: 64, message: "--store needs a value"),
            BadInput(arguments: [], status: 64, message: "a command is missing"),
            // `write DOMAIN PLIST`: the whole-domain form
            BadInput(arguments: ["write", "d", "k"], status: 64, message: "expected a dictionary"),
            BadInput(arguments: ["write", "d"], status: 64, message: "wrong number of arguments"),
            BadInput(arguments: ["rename", "d", "k"], status: 64, message: "wrong number of arguments"),
            BadInput(
                arguments: ["write", "d", "k", "-bogus", "1"], status: 64, message: "unknown flag '-bogus'"),
            BadInput(
                arguments: ["write", "d", "k", "-int", "abc"], status: 64,
                message: "-int needs a whole number"),
            BadInput(
                arguments: ["write", "d", "k", "-int", "99999999999999999999"], status: 64,
                message: "-int needs a whole number"),
            BadInput(
                arguments: ["write", "d", "k", "-float", "loud"], status: 64, message: "-float needs a number"
            ),
            BadInput(
                arguments: ["write", "d", "k", "-bool", "maybe"], status: 64,
                message: "-bool needs true, false"),
            BadInput(
                arguments: ["write", "d", "k", "-date", "yesterday"], status: 64,
                message: "-date needs a date"),
            BadInput(
                arguments: ["write", "d", "k", "-data", "xyz"], status: 64, message: "-data needs hexadecimal"
            ),
            BadInput(arguments: ["write", "d", "k", "-int"], status: 64, message: "-int needs a value"),
            BadInput(arguments: ["write", "d", "k", "-dict", "a"], status: 64, message: "has no value"),
            BadInput(
                arguments: ["write", "d", "k", "-array", "-int", "x"], status: 64,
                message: "-int needs a whole number"),
            BadInput(arguments: ["write", "d", "k", "{ a = 1"], status: 64, message: "malformed plist text"),
            BadInput(arguments: ["write", "d", "k", "(a, b"], status: 64, message: "malformed plist text"),
            BadInput(arguments: ["write", "d", "k", "<0g>"], status: 64, message: "malformed plist text"),
            BadInput(arguments: ["write", "d", "{ a = 1; "], status: 64, message: "malformed plist text"),
            BadInput(
                arguments: ["write", "d", "not a dictionary"], status: 64, message: "expected a dictionary"),
            BadInput(
                arguments: ["write", "d", "name", "-array-add", "x"], status: 64, message: "not an array"),
            BadInput(
                arguments: ["write", "d", "name", "-dict-add", "x", "y"], status: 64,
                message: "not a dictionary"),
            BadInput(
                arguments: ["import", "d", "/nonexistent/file.plist"], status: 66,
                message: "cannot read /nonexistent/file.plist"),
            BadInput(
                arguments: ["export", "d", "out.plist", "--format", "yaml"], status: 64,
                message: "--format needs xml, json or binary"),
            BadInput(
                arguments: ["delete", "d", "missing"], status: 1,
                message: "The domain/default pair of (d, missing) does not exist"),
            BadInput(
                arguments: ["rename", "d", "missing", "new"], status: 1,
                message: "The domain/default pair of (d, missing) does not exist"),
            BadInput(arguments: ["help", "nothing"], status: 64, message: "no command 'nothing'"),
        ]

        @Test(arguments: cases)
        func badInputChangesNothing(input: BadInput) throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "name", "Zhuo")
            try cli.run("write", "d", "count", "-int", "3")
            let before = try cli.everything()

            let result = try cli.run(input.arguments)
            #expect(result.status == input.status)
            #expect(result.stderr.contains(input.message), "stderr: \(result.stderr)")
            #expect(result.stdout.isEmpty)
            let firstLine = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
            #expect(firstLine.contains(input.message), "the first line says what is wrong")
            #expect(try cli.everything() == before, "the store is exactly as before")
        }

        @Test(arguments: [
            Data("this is not a plist".utf8),
            Data("<?xml version=\"1.0\"?><plist><dict><key>a</key>".utf8),
            Data("[1, 2, 3]".utf8),
            Data("bplist00 garbage".utf8),
            Data("{\"a\": null}".utf8),
            // Found by the plist-file fuzzer: an 8-byte object reference beyond `Int` (it trapped).
            Data(
                base64Encoded:
                    "YnBsaXN0MDDW8f///wUGBwoODxARUWRUbGlzdFFuVG5hbWVSb25RctEICVF4UXmjCwwNEAFTdHdvQgABEANUWmh1bwkjP9AAAAAAAAAIFRccHiMiKCspLS8zNTk8PkNEAAAARmxvAAAAAQgAAAAAAAAAEgAAAAAAAAAAAAAAAAAAAE0="
            )!,
        ])
        func unreadableImportFilesChangeNothing(contents: Data) throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "name", "Zhuo")
            let before = try cli.everything()
            let file = cli.home.appendingPathComponent("bad.plist")
            try contents.write(to: file)

            let result = try cli.run("import", "d", file.path)
            #expect(result.status == 64)
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(result.stderr.hasPrefix("prefs: "))
            #expect(try cli.everything() == before)
        }
    }
#endif
