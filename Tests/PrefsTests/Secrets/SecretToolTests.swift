#if os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs

    /// The `prefs` tool on a domain whose program declares a secret key, with a real Secret
    /// Service: it says whether the secret is set and shows it only with `--show-secret`; it
    /// writes and resets it in the secret store; and no file it or the program wrote holds the
    /// value. (In the Secret Service's suite, which runs one test at a time: others stop the
    /// daemon.)
    extension SecretServiceTests {
        @Test func theToolShowsWhetherASecretIsSetAndTheValueOnlyWhenAsked() throws {
            guard SecretServiceDaemon.ready != nil else { return }
            let home = ScratchFolder.make("secret-tool")
            let configHome = home.appendingPathComponent("config")
            let domain = "com.example.secrets.\(UUID().uuidString.prefix(8))"
            let environment: [String: String?] = ["HOME": home.path, "XDG_CONFIG_HOME": configHome.path]
            func prefs(_ arguments: String...) throws -> ChildOutput {
                try ChildProcess.run(
                    Products.executable("prefs"), arguments, environment: environment, input: Data())
            }
            // The program: its store where the tool looks for the domain, its key declared.
            let path = configHome.appendingPathComponent("prefs/\(domain).sqlite").path
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let program = Preferences(store: try SQLiteStore(path: path))
            let token = Preferences.Key<String?>("apiToken", help: "The service's token", storedAs: .secret)
            try program.publish(token, Preferences.Key<Double>("volume", default: 0.5))
            let secret = "never-in-a-file-tool-secret-81f2c0"
            try program.set(secret, for: token)

            let read = try prefs("read", domain, "apiToken")
            #expect(read.status == 0)
            #expect(read.stdout == "")
            #expect(read.stderr.contains("is a secret") && read.stderr.contains("is set"), "\(read.stderr)")
            #expect(!read.stderr.contains(secret))
            let shown = try prefs("--show-secret", "read", domain, "apiToken")
            #expect(shown.stdout == secret, "\(shown.stderr)")

            let described = try prefs("describe", domain)
            #expect(
                described.stdout.contains("apiToken") && described.stdout.contains("set (secret, not shown)"),
                "\(described.stdout)")
            #expect(!described.stdout.contains(secret))
            let json = try prefs("--json", "describe", domain)
            #expect(json.stdout.contains("\"secret\"") && !json.stdout.contains(secret), "\(json.stdout)")
            #expect(!(try prefs("read", domain)).stdout.contains(secret))
            #expect(!(try prefs("export", domain, "-")).stdout.contains(secret))

            // Written and reset through the tool, into the secret store; the program sees it.
            #expect(try prefs("write", domain, "apiToken", "never-in-a-file-from-the-tool").status == 0)
            #expect(program[token] == "never-in-a-file-from-the-tool")
            #expect(try prefs("reset", domain, "apiToken").status == 0)
            #expect(program[token] == nil)
            let unset = try prefs("read", domain, "apiToken")
            #expect(unset.stderr.contains("is not set"), "\(unset.stderr)")

            // From standard input, so that no other user sees it in `ps`: the text as it is.
            let piped = try ChildProcess.run(
                Products.executable("prefs"), ["--stdin", "write", domain, "apiToken"],
                environment: environment,
                input: Data("-never-in-a-file=piped\n".utf8))
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(program[token] == "-never-in-a-file=piped")

            try program.set(secret, for: token)
            try (program.store as! SQLiteStore).flush()
            #expect(SecretFiles.holding(secret, under: home) == [])
            #expect(SecretFiles.holding("never-in-a-file-from-the-tool", under: home) == [])
            #expect(SecretFiles.holding("never-in-a-file=piped", under: home) == [])
        }
    }
#endif
