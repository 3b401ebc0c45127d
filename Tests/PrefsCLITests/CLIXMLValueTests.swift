#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import PrefsTool
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does", item 1: a value given as
    /// XML is taken the way `defaults write` and `-array-add` take it.
    @Suite struct CLIXMLValueTests {
        @Test func anXMLElementIsAValueOfItsType() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "count", "<integer>5</integer>").status == 0)
            #expect(try cli.run("read-type", "d", "count").stdout == "Type is integer")
            #expect(try cli.run("read", "d", "count").stdout == "5")
            #expect(try cli.run("write", "d", "flags", " <dict><key>a</key><true/></dict>").status == 0)
            #expect(try cli.run("--json", "read", "d", "flags").stdout == "{\n  \"a\": true\n}")
        }

        @Test func aWholeXMLDocumentIsAValue() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let document = """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <array><string>q</string><real>1.5</real></array>
                </plist>
                """
            #expect(try cli.run("write", "d", "list", document).status == 0)
            #expect(try cli.run("--json", "read", "d", "list").stdout == "[\n  \"q\",\n  1.5\n]")
        }

        /// The recipe for adding an application and a spacer to the Dock.
        @Test func theDockRecipeAddsDictionariesToAnArray() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let app = """
                <dict><key>tile-data</key><dict><key>file-data</key><dict>\
                <key>_CFURLString</key><string>/Applications/Safari.app</string>\
                <key>_CFURLStringType</key><integer>0</integer></dict></dict></dict>
                """
            let spacer = #"<dict><key>tile-type</key><string>spacer-tile</string></dict>"#
            #expect(try cli.run("write", "com.apple.dock", "persistent-apps", "-array-add", app).status == 0)
            #expect(
                try cli.run("write", "com.apple.dock", "persistent-apps", "-array-add", spacer).status == 0)
            let json = try cli.run("--json", "read", "com.apple.dock", "persistent-apps").stdout
            let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]
            #expect(parsed?.count == 2, "\(json)")
            let fileData = (parsed?.first?["tile-data"] as? [String: Any])?["file-data"] as? [String: Any]
            #expect(fileData?["_CFURLString"] as? String == "/Applications/Safari.app")
            #expect(fileData?["_CFURLStringType"] as? Int == 0)
            #expect(parsed?.last?["tile-type"] as? String == "spacer-tile")
        }

        @Test func oldStyleDataStillReadsAsData() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "bytes", "<0fa1 2b>").status == 0)
            #expect(try cli.run("read-type", "d", "bytes").stdout == "Type is data")
            #expect(try cli.run("read", "d", "bytes").stdout == "<0fa12b>")
        }

        @Test(arguments: [
            "<integer>5</integer> tail", "<integer>x</integer>", "<dict><key>a</key></dict>", "<integer>5",
            "<unknown/>",
        ])
        func malformedXMLIsRefusedAndStoresNothing(text: String) throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "kept", "-int", "1")
            let result = try cli.run("write", "d", "kept", text)
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.contains("XML property list"), "\(result.stderr)")
            #expect(try cli.run("read", "d", "kept").stdout == "1")
        }

        @Test func xmlTellsItselfFromData() {
            #expect(PlistText.isXMLElement("<integer>5</integer>"))
            #expect(PlistText.isXMLElement("<?xml version=\"1.0\"?><plist/>"))
            #expect(PlistText.isXMLElement("<date>2024-01-01T00:00:00Z</date>"))
            #expect(!PlistText.isXMLElement("<dada>"))
            #expect(!PlistText.isXMLElement("<0fa1 2b>"))
            #expect(!PlistText.isXMLElement("<>"))
        }
    }
#endif
