#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Unsigned 64-bit integers in imported property lists (XML, binary, JSON) import exactly.
    @Suite struct CLIUnsignedIntegerTests {
        private let big = "18446744073709551615"

        @Test func anXMLIntegerAboveInt64ImportsExactly() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let xml = Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>big</key><integer>\(big)</integer>\
                <key>top</key><integer>9223372036854775808</integer></dict></plist>
                """.utf8)
            let imported = try cli.run("import", "d", "-", input: xml)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try cli.run("read", "d", "big").stdout == big)
            #expect(try cli.run("read", "d", "top").stdout == "9223372036854775808")
            let exported = try cli.run("export", "d", "-")
            #expect(exported.stdout.contains("<integer>\(big)</integer>"))
        }

        @Test func aBinaryPlistFromFoundationImportsExactly() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let binary = try PropertyListSerialization.data(
                fromPropertyList: ["big": NSNumber(value: UInt64.max)], format: .binary, options: 0)
            let imported = try cli.run("import", "d", "-", input: binary)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try cli.run("read", "d", "big").stdout == big)
        }

        @Test func aJSONNumberAboveInt64ImportsExactly() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let imported = try cli.run("import", "d", "-", input: Data(#"{"big": \#(big)}"#.utf8))
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try cli.run("read", "d", "big").stdout == big)
        }
    }
#endif
