#if os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Two programs that share settings and the `prefs` tool name one domain, and see one thing:
    /// `Preferences.standard(domain:)` is the domain's store under its administrator's layer, as
    /// the tool shows it. (A program that built `SQLiteStore(path: defaultPath(domain:))` by hand
    /// read 9 where `prefs describe` said the key was locked at 99, and wrote 5.)
    @Suite struct CLIStandardDomainTests {
        @Test func aProgramNamingADomainSeesWhatTheToolShows() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let system = cli.home.appendingPathComponent("system").path
            try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
            let environment = cli.environment.merging(["PREFS_SYSTEM_DIRS": system]) { _, new in new }
            func run(_ program: String, _ arguments: String...) throws -> ChildOutput {
                try ChildProcess.run(
                    Products.executable(program), arguments, environment: environment, input: Data())
            }

            // Written by one program, read by the tool and by another program.
            #expect(
                try run("PrefsTestHelper", "standard-domain", "com.example.shared", "count", "7").stdout
                    == "0\nwrote")
            #expect(try run("prefs", "read", "com.example.shared", "count").stdout == "7")
            #expect(
                try run("PrefsTestHelper", "standard-domain", "com.example.shared", "count").stdout == "7")

            // An administrator locks it at 99: the program reads 99 and its write is refused.
            let layer: [String: Any] = ["locked": ["count": 99]]
            try PropertyListSerialization.data(fromPropertyList: layer, format: .xml, options: 0)
                .write(to: URL(fileURLWithPath: "\(system)/com.example.shared.plist"))
            #expect(try run("prefs", "read", "com.example.shared", "count").stdout == "99")
            let program = try run("PrefsTestHelper", "standard-domain", "com.example.shared", "count", "5")
            let lines = program.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "99", "\(program.stdout)")
            #expect(
                lines.last?.hasPrefix("refused:") == true && lines.last?.contains("locked") == true,
                "\(program.stdout)")
            #expect(try run("prefs", "read", "com.example.shared", "count").stdout == "99")
            // What the user stored is still there under the lock.
            try FileManager.default.removeItem(atPath: "\(system)/com.example.shared.plist")
            #expect(try run("prefs", "read", "com.example.shared", "count").stdout == "7")
        }
    }
#endif
