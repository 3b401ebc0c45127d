#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Keys that Swift's `String ==` merges but every file format keeps apart: `é` and `Å`, each
    /// composed and decomposed.
    private let spellings = ["\u{E9}", "e\u{301}", "\u{C5}", "A\u{30A}"]

    /// Issue "Nothing lost, nothing hung", item 2, in the `prefs` tool: every key exact.
    @Suite struct CLIExactKeyTests {
        private func xml(_ keys: [String]) -> Data {
            let entries = keys.enumerated().map { "<key>\($1)</key><integer>\($0)</integer>" }.joined()
            return Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0"><dict>\(entries)</dict></plist>
                """.utf8)
        }

        /// The keys of a domain as `prefs --json read` prints them, as scalar arrays.
        private func storedKeys(_ cli: CLI, _ domain: String) throws -> Set<[UInt32]> {
            let printed = try cli.run("--json", "read", domain)
            // JSONSerialization on Linux would merge the keys: read the quoted keys off the text.
            var keys = Set<[UInt32]>()
            for line in printed.stdout.split(separator: "\n") where line.contains("\": ") {
                let key = line.drop { $0 != "\"" }.dropFirst().prefix { $0 != "\"" }
                keys.insert(String(key).unicodeScalars.map(\.value))
            }
            return keys
        }

        @Test func importingFourSpellingsStoresFour() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let imported = try cli.run("import", "d", "-", input: xml(spellings))
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try storedKeys(cli, "d") == Set(spellings.map { $0.unicodeScalars.map(\.value) }))
            for (index, key) in spellings.enumerated() {
                #expect(try cli.run("read", "d", key).stdout == "\(index)")
            }
        }

        /// A binary plist whose dictionary has each key of `keys`, with the values 0, 1, 2 and on.
        private func binary(_ keys: [String]) -> Data {
            var objects: [[UInt8]] = []
            let count = keys.count
            // Object 0: the dictionary; 1...count: the keys (UTF-16); count+1...: the integers.
            objects.append(
                [0xD0 | UInt8(count)] + (1...count).map(UInt8.init) + (1...count).map { UInt8(count + $0) })
            for key in keys {
                let units = Array(key.utf16)
                objects.append(
                    [0x60 | UInt8(units.count)] + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
            }
            for index in 0..<count { objects.append([0x10, UInt8(index)]) }
            var file = Array("bplist00".utf8)
            var offsets: [UInt8] = []
            for object in objects {
                offsets.append(UInt8(file.count))
                file += object
            }
            let table = file.count
            file += offsets
            file += [0, 0, 0, 0, 0, 0, 1, 1]  // unused, sort version, offset size 1, reference size 1
            for number in [objects.count, 0, table] {
                file += (0..<8).reversed().map { UInt8((number >> ($0 * 8)) & 0xFF) }
            }
            return Data(file)
        }

        @Test func importingFourSpellingsFromABinaryPlistStoresFour() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let imported = try cli.run("import", "d", "-", input: binary(spellings))
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try storedKeys(cli, "d").count == 4)
            #expect(try cli.run("read", "d", "e\u{301}").stdout == "1")
        }

        @Test(arguments: ["xml", "json"])
        func exportAndImportKeepEverySpelling(format: String) throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("import", "d", "-", input: xml(spellings)).status == 0)
            let exported = try cli.run("export", "d", "-", "--format", format)
            #expect(exported.status == 0, "\(exported.stderr)")
            let imported = try cli.run("import", "copy", "-", input: exported.stdoutData)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try storedKeys(cli, "copy").count == 4)
            #expect(try cli.run("read", "copy", "A\u{30A}").stdout == "3")
        }

        /// Issue 38, item 7: a binary export would merge the spellings (Foundation writes it), so
        /// it is refused, naming both keys by their scalars, and nothing is written.
        @Test func aBinaryExportNamesTheTwoSpellingsItWouldMerge() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "\u{E9}", "-int", "1").status == 0)
            #expect(try cli.run("write", "d", "e\u{301}", "-int", "2").status == 0)
            let path = cli.home.appendingPathComponent("out.plist").path
            let exported = try cli.run("export", "d", path, "--format", "binary")
            #expect(exported.status == 64, "\(exported.stderr)")
            #expect(
                exported.stderr.contains("(U+00E9)") && exported.stderr.contains("(U+0065 U+0301)"),
                "\(exported.stderr)")
            #expect(!FileManager.default.fileExists(atPath: path))
        }

        @Test func deletingOneSpellingLeavesTheOther() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "\u{E9}", "-int", "1").status == 0)
            #expect(try cli.run("write", "d", "e\u{301}", "-int", "2").status == 0)
            #expect(try cli.run("delete", "d", "e\u{301}").status == 0)
            #expect(try cli.run("read", "d", "\u{E9}").stdout == "1")
            #expect(try cli.run("read", "d", "e\u{301}").status != 0)
        }

        @Test func aWholeDomainInPlistTextKeepsBothSpellings() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let written = try cli.run("write", "d", "{ \"\u{E9}\" = one; \"e\u{301}\" = two; }")
            #expect(written.status == 0, "\(written.stderr)")
            #expect(try cli.run("read", "d", "\u{E9}").stdout == "one")
            #expect(try cli.run("read", "d", "e\u{301}").stdout == "two")
        }
    }
#endif
