#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Issue 49, item 9: every command that writes a declared key checks the value's type — and
    /// the types inside a dictionary or an array — before its allowed values, in words ("expected
    /// an integer, got a string"), and reads old-style text (all strings) as the declared types,
    /// so what the tool writes is what the program reads.
    @Suite struct CLIDeclaredTypeTests {
        /// A CLI with the helper's typed keys published to `com.example.typed`.
        private func declared() throws -> (CLI, path: String) {
            let cli = try CLI()
            let path = cli.home.appendingPathComponent("config/prefs/com.example.typed.sqlite").path
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let published = try cli.run("typed-keys", path, program: "PrefsTestHelper")
            #expect(published.status == 0, "\(published.stderr)")
            return (cli, path)
        }

        /// What the program reads of `key`, and what its read reported.
        private func programReads(_ key: String, cli: CLI, path: String) throws -> (
            value: String, issues: String
        ) {
            let read = try cli.run("typed-keys", path, key, program: "PrefsTestHelper")
            return (read.stdout, read.stderr)
        }

        struct Refusal: Sendable, CustomTestStringConvertible {
            let arguments: [String]
            let says: String
            var testDescription: String { arguments.joined(separator: " ") }
        }

        static let refusals: [Refusal] = [
            Refusal(arguments: ["count", "-string", "abc"], says: "expected an integer, got a string (abc)"),
            Refusal(arguments: ["count", "abc"], says: "expected an integer, got 'abc'"),
            Refusal(arguments: ["enabled", "-int", "1"], says: "expected a boolean, got an integer (1)"),
            Refusal(arguments: ["limits", "-string", "x"], says: "expected a dictionary, got a string (x)"),
            Refusal(
                arguments: ["limits", "{maxConnections=many;}"],
                says: "maxConnections: expected an integer, got 'many'"),
            Refusal(
                arguments: ["limits", "<dict><key>maxConnections</key><string>5</string></dict>"],
                says: "maxConnections: expected an integer, got a string (5)"),
            Refusal(
                arguments: ["limits", "-dict", "maxConnections", "-string", "5"],
                says: "maxConnections: expected an integer, got a string (5)"),
            Refusal(
                arguments: ["limits", "-dict-add", "retries", "-bool", "yes"],
                says: "retries: expected an integer, got a boolean (1)"),
            Refusal(
                arguments: ["tags", "-array", "(1, x)"], says: "element 1[1]: expected an integer, got 'x'"),
            Refusal(
                arguments: ["tags", "-array-add", "-int", "3"], says: "expected an array, got an integer (3)"),
            Refusal(
                arguments: ["window", "{width=wide;title=Main;}"],
                says: "width: expected an integer, got 'wide'"),
        ]

        @Test(arguments: refusals)
        func aValueOfTheWrongTypeIsRefusedInWords(_ refusal: Refusal) throws {
            let (cli, _) = try declared()
            defer { cli.remove() }
            let before = try cli.everything()
            let result = try cli.run(["write", "com.example.typed"] + refusal.arguments)
            #expect(result.status == 64)
            #expect(result.stderr.contains(refusal.says), "\(result.stderr)")
            #expect(!result.stderr.contains("not one of those values"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(try cli.everything() == before, "nothing was written")
        }

        /// A value of the right type outside the allowed ones is still "not one of those values".
        @Test func theRightTypeOutsideTheAllowedValuesIsSaidSo() throws {
            let (cli, _) = try declared()
            defer { cli.remove() }
            let result = try cli.run("write", "com.example.typed", "count", "-int", "500")
            #expect(
                result.status == 64 && result.stderr.contains("500 is not one of those values"),
                "\(result.stderr)")
        }

        /// Old-style text, whose scalars are all strings, is written as the declared types, and
        /// the program reads it (before: strings, and the program read its default).
        @Test func oldStyleTextIsWrittenAsTheProgramReadsIt() throws {
            let (cli, path) = try declared()
            defer { cli.remove() }
            func write(_ arguments: String...) throws {
                let result = try cli.run(["write", "com.example.typed"] + arguments)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            try write("limits", "{maxConnections=5;}")
            #expect(
                try programReads("limits", cli: cli, path: path) == (
                    #"[(key: "maxConnections", value: 5)]"#, ""
                ))
            try write("limits", "-dict-add", "retries", "3")
            #expect(try cli.run("read", "com.example.typed", "limits").stdout.contains("retries = 3"))
            #expect(try programReads("limits", cli: cli, path: path).issues == "")
            try write("tags", "-array", "(1, 2)", "(3)")
            try write("tags", "-array-add", "(4)")
            #expect(try programReads("tags", cli: cli, path: path) == ("[[1, 2], [3], [4]]", ""))
            try write("window", "{width=800;title=Big;}")
            #expect(
                try programReads("window", cli: cli, path: path) == (#"Window(width: 800, title: "Big")"#, "")
            )
            try write("enabled", "yes")
            #expect(try programReads("enabled", cli: cli, path: path) == ("true", ""))
        }

        /// The commands that write a whole domain, or move a value, check it the same way.
        @Test func wholeDomainsImportsAndRenamesAreCheckedToo() throws {
            let (cli, path) = try declared()
            defer { cli.remove() }
            // Old-style text for the whole domain: read as the declared types.
            let domain = try cli.run(
                "write", "com.example.typed", "{count=7; limits={maxConnections=2;}; other=x;}")
            #expect(domain.status == 0, "\(domain.stderr)")
            #expect(try programReads("count", cli: cli, path: path) == ("7", ""))
            #expect(try programReads("limits", cli: cli, path: path).value.contains("2"))
            let before = try cli.everything()
            let wrongDomain = try cli.run("write", "com.example.typed", "{count=seven;}")
            #expect(
                wrongDomain.status == 64 && wrongDomain.stderr.contains("expected an integer, got 'seven'"))

            // An import carries its types: checked, not converted.
            let json = cli.home.appendingPathComponent("in.json")
            try Data(#"{"enabled": 1, "count": 3}"#.utf8).write(to: json)
            let imported = try cli.run("import", "com.example.typed", json.path)
            #expect(
                imported.status == 64 && imported.stderr.contains("expected a boolean, got an integer (1)"),
                "\(imported.stderr)")
            let xml = cli.home.appendingPathComponent("in.plist")
            let plist: [String: Any] = ["limits": ["maxConnections": "9"]]
            try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(
                to: xml)
            let importedXML = try cli.run("import", "com.example.typed", xml.path)
            #expect(
                importedXML.status == 64
                    && importedXML.stderr.contains("maxConnections: expected an integer, got a string (9)"),
                "\(importedXML.stderr)")

            // A rename into a declared key of another type.
            #expect(try cli.run("write", "com.example.typed", "label", "hello").status == 0)
            let after = try cli.everything()
            let renamed = try cli.run("rename", "com.example.typed", "label", "count")
            #expect(
                renamed.status == 64 && renamed.stderr.contains("expected an integer, got a string (hello)"),
                "\(renamed.stderr)")
            #expect(try cli.everything() == after, "nothing was written")
            #expect(before != after)

            // --force writes, and says what the program reads instead.
            let forced = try cli.run("--force", "write", "com.example.typed", "count", "-string", "abc")
            #expect(forced.status == 0 && forced.stderr.contains("reads its default, 1"), "\(forced.stderr)")
            #expect(try programReads("count", cli: cli, path: path).value == "1")
        }
    }
#endif
