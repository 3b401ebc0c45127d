#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// End-to-end: the built `prefs` binary, on an isolated HOME/XDG_CONFIG_HOME.
    @Suite struct CLITests {
        /// Issue "Keys the program declares are known outside it", items 3-5: a program publishes
        /// its keys; the tool describes them, reads a default, validates writes, resets.
        @Test func theToolReadsWhatAProgramDeclares() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let path = cli.home.appendingPathComponent("config/prefs/com.example.app.sqlite").path
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let published = try cli.run("publish-keys", path, program: "PrefsTestHelper")
            #expect(published.status == 0, "\(published.stderr)")

            // A value the program cannot read, written with --force: `read` says so, with what the
            // program reads instead (it printed the value as if the program read it).
            #expect(
                try cli.run("--force", "write", "com.example.app", "volume", "-string", "loud").status == 0)
            let unreadable = try cli.run("read", "com.example.app", "volume")
            #expect(unreadable.stdout == "loud")
            #expect(
                unreadable.stderr.contains("the program cannot read it and reads its default, 0.5 instead"),
                "\(unreadable.stderr)")
            #expect(try cli.run("delete", "com.example.app", "volume").status == 0)

            // A declared key never set reads as its default, said on stderr.
            let read = try cli.run("read", "com.example.app", "volume")
            #expect(read.status == 0 && read.stdout == "0.5", "\(read.stderr)")
            #expect(read.stderr.contains("not set"))
            #expect(try cli.run("read-type", "com.example.app", "quality").stdout == "Type is string")

            // A value without a type flag takes the declared type; one outside is refused.
            #expect(try cli.run("write", "com.example.app", "volume", "0.8").status == 0)
            #expect(try cli.run("read-type", "com.example.app", "volume").stdout == "Type is float")
            let refused = try cli.run("write", "com.example.app", "volume", "1.5")
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("-float (Double) accepting 0...1"), "\(refused.stderr)")
            let wrongType = try cli.run("write", "com.example.app", "quality", "-int", "3")
            #expect(wrongType.status == 64 && wrongType.stderr.contains("low, high"), "\(wrongType.stderr)")
            #expect(try cli.run("read", "com.example.app", "volume").stdout == "0.8", "nothing was written")
            let forced = try cli.run("--force", "write", "com.example.app", "quality", "medium")
            #expect(
                forced.status == 0 && forced.stderr.contains("reads its default, high"), "\(forced.stderr)")

            // describe: declared keys with their values, undeclared ones apart; --json for scripts.
            #expect(try cli.run("write", "com.example.app", "legacy", "-int", "1").status == 0)
            let described = try cli.run("describe", "com.example.app")
            #expect(
                described.stdout.contains(
                    "volume: -float (Double) accepting 0...1, default 0.5, value 0.8 (set)"),
                "\(described.stdout)")
            #expect(described.stdout.contains("Playback volume"))
            #expect(
                described.stdout.contains("nickname: -string (String?), default none, value not set")
            )
            // Types as Swift writes them, and a Boolean as a word.
            #expect(described.stdout.contains("autoplay: -bool (Bool), default true,"), "\(described.stdout)")
            #expect(described.stdout.contains("recent: -array ([String])"), "\(described.stdout)")
            // A collection on the key's one line, as the rest of it (the newcomer trial saw a
            // plist spread over several lines).
            #expect(try cli.run("write", "com.example.app", "recent", "-array", "x", "y z").status == 0)
            let recent = try cli.run("describe", "com.example.app", "recent").stdout
            #expect(
                recent.contains("recent: -array ([String]), default (), value (x, \"y z\") (set)"),
                "\(recent)")
            #expect(described.stdout.contains("set but not declared"))
            #expect(described.stdout.contains("legacy = 1"))
            let json = try cli.run("--json", "describe", "com.example.app", "volume")
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let volume = (object?["declared"] as? [String: Any])?["volume"] as? [String: Any]
            #expect(
                volume?["type"] as? String == "-float" && volume?["set"] as? Bool == true, "\(json.stdout)")

            // reset: the defaults show again.
            #expect(try cli.run("reset", "com.example.app", "volume", "quality").status == 0)
            #expect(try cli.run("read", "com.example.app", "volume").stdout == "0.5")

            // Item 7: an administrator's lock is shown, and a write of the key refused (exit 1).
            let system = cli.home.appendingPathComponent("system").path
            try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
            let layer: [String: Any] = ["locked": ["volume": 0.2, "kiosk": true]]
            try PropertyListSerialization.data(fromPropertyList: layer, format: .xml, options: 0)
                .write(to: URL(fileURLWithPath: "\(system)/com.example.app.plist"))
            let environment = cli.environment.merging(["PREFS_SYSTEM_DIRS": system]) { _, new in new }
            let locked = try ChildProcess.run(
                Products.executable("prefs"), ["write", "com.example.app", "volume", "0.9"],
                environment: environment,
                input: Data())
            #expect(
                locked.status == 1 && locked.stderr.contains("locked by an administrator"), "\(locked.stderr)"
            )
            #expect(locked.stderr.contains("\(system)/com.example.app.plist"))
            let shown = try ChildProcess.run(
                Products.executable("prefs"), ["describe", "com.example.app", "volume"],
                environment: environment,
                input: Data())
            #expect(
                shown.stdout.contains("value 0.2 (locked by \(system)/com.example.app.plist)"),
                "\(shown.stdout)")
            // A lock of a key the program does not declare is still a lock, and listed apart.
            let all = try ChildProcess.run(
                Products.executable("prefs"), ["describe", "com.example.app"], environment: environment,
                input: Data())
            #expect(
                all.stdout.contains("locked but not declared") && all.stdout.contains("kiosk = 1"),
                "\(all.stdout)")

            // Issue 38, item 1: `read` prints the value the program reads and says where it
            // comes from — the lock, else the stored value, else the system default, else the
            // code's — and `read-type` follows it; item 6: a system file that is no plist is named.
            func run(_ arguments: String...) throws -> ChildOutput {
                try ChildProcess.run(
                    Products.executable("prefs"), arguments, environment: environment, input: Data())
            }
            let lockedRead = try run("read", "com.example.app", "volume")
            #expect(lockedRead.stdout == "0.2" && lockedRead.stderr.contains("locked by an administrator"))
            let defaults: [String: Any] = ["defaults": ["volume": 0.3, "extra": "from-admin"]]
            try PropertyListSerialization.data(fromPropertyList: defaults, format: .xml, options: 0)
                .write(to: URL(fileURLWithPath: "\(system)/com.example.app.plist"))
            #expect(
                try cli.run("read", "com.example.app", "volume").stderr.contains("not set"), "reset above")
            let systemDefault = try run("read", "com.example.app", "volume")
            #expect(systemDefault.stdout == "0.3", "\(systemDefault.stdout) \(systemDefault.stderr)")
            #expect(
                systemDefault.stderr.contains("system default from \(system)/com.example.app.plist"),
                "\(systemDefault.stderr)")
            #expect(try run("read", "com.example.app", "extra").stdout == "from-admin")
            #expect(try run("read-type", "com.example.app", "extra").stdout == "Type is string")
            #expect(try cli.run("write", "com.example.app", "volume", "0.7").status == 0)
            #expect(
                try run("read", "com.example.app", "volume").stdout == "0.7", "set wins over a system default"
            )
            try Data("this is not a plist {".utf8).write(
                to: URL(fileURLWithPath: "\(system)/com.example.app.plist"))
            let broken = try run("describe", "com.example.app")
            #expect(
                broken.stderr.contains("\(system)/com.example.app.plist") && broken.stderr.contains("not"),
                "\(broken.stderr)")
        }

        /// Issue "Switching a real app", item 8: a domain an app not yet switched keeps in
        /// UserDefaults is named, with the option that reads it.
        @Test func aDomainOnlyInUserDefaultsIsNamedWithTheOptionThatReadsIt() throws {
            let cli = try CLI()
            defer { cli.remove() }
            // A domain of this test alone, removed after (on a Mac it is the developer's own).
            let domain = ScratchDefaultsDomain("com.example.legacy")
            defer { domain.remove() }
            let legacy = domain.name
            let plain = try cli.run(
                "plain-write", legacy, "volume", "double", "0.8", program: "PrefsTestHelper")
            #expect(plain.status == 0, "\(plain.stderr)")
            let read = try cli.run("read", legacy, "volume")
            #expect(read.status == 1)
            #expect(read.stderr.contains("--store userdefaults read \(legacy)"), "\(read.stderr)")
            #if !canImport(Darwin)
                let found = try cli.run("--store", "userdefaults", "read", legacy, "volume")
                #expect(found.stdout == "0.8", "\(found.stderr)")
                // Watching UserDefaults on Linux would show nothing: said, not silently empty.
                let watch = try cli.run("--store", "userdefaults", "watch", legacy)
                #expect(watch.status == 64)
                #expect(watch.stderr.contains("cannot see other processes' writes"), "\(watch.stderr)")
            #endif
        }

        @Test func writeThenReadOnTheDefaultStore() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "com.example.demo", "greeting", "hello world").status == 0)
            let read = try cli.run("read", "com.example.demo", "greeting")
            #expect(read.status == 0)
            #expect(read.stdout == "hello world")
            // The domain is the file Preferences.standard of a program named com.example.demo uses.
            #expect(
                FileManager.default.fileExists(
                    atPath: cli.home.path + "/config/prefs/com.example.demo.sqlite"))
        }

        @Test(arguments: [
            (["-string", "hello world"], "hello world", "string"),
            (["plain text"], "plain text", "string"),
            (["-int", "42"], "42", "integer"),
            (["-integer", "-7"], "-7", "integer"),
            (["-float", "0.5"], "0.5", "float"),
            (["-bool", "true"], "1", "boolean"),
            (["-boolean", "NO"], "0", "boolean"),
            (["-date", "2024-05-01T12:00:00Z"], "2024-05-01 12:00:00 +0000", "date"),
            (["-date", "2024-05-01 12:00:00 +0000"], "2024-05-01 12:00:00 +0000", "date"),
            (["-data", "0aFF"], "<0aff>", "data"),
            (["-array", "a", "-int", "2"], "(\n    a,\n    2\n)", "array"),
            (["-dict", "a", "-bool", "yes", "b", "x"], "{\n    a = 1;\n    b = x;\n}", "dictionary"),
            (["(1, \"two words\", <00>)"], "(\n    1,\n    \"two words\",\n    <00>\n)", "array"),
            (["{ k = v; }"], "{\n    k = v;\n}", "dictionary"),
        ])
        func everyTypeFlag(arguments: [String], printed: String, type: String) throws {
            let cli = try CLI()
            defer { cli.remove() }
            let write = try cli.run(["write", "d", "k"] + arguments)
            #expect(write.status == 0, "\(write.stderr)")
            #expect(try cli.run("read", "d", "k").stdout == printed)
            #expect(try cli.run("read-type", "d", "k").stdout == "Type is \(type)")
        }

        @Test func arrayAddAndDictAddExtendWhatIsStored() throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "list", "-array", "a")
            try cli.run("write", "d", "list", "-array-add", "b", "-int", "3")
            #expect(try cli.run("--json", "read", "d", "list").stdout == "[\n  \"a\",\n  \"b\",\n  3\n]")
            try cli.run("write", "d", "map", "-dict-add", "x", "1")
            try cli.run("write", "d", "map", "-dict-add", "y", "-float", "2.5")
            #expect(try cli.run("--json", "read", "d", "map").stdout == "{\n  \"x\": \"1\",\n  \"y\": 2.5\n}")
        }

        @Test func writingAWholeDomainReplacesIt() throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "old", "gone")
            #expect(try cli.run("write", "d", "{ a = 1; b = (x, y); }").status == 0)
            #expect(
                try cli.run("read", "d").stdout
                    == "{\n    a = 1;\n    b = (\n        x,\n        y\n    );\n}")
        }

        @Test func deleteRenameDomainsAndFind() throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "alpha", "volume", "-float", "0.5")
            try cli.run("write", "alpha", "name", "Zhuo")
            try cli.run("write", "beta", "greeting", "hello there")
            #expect(try cli.run("domains").stdout == "alpha, beta")
            #expect(try cli.run("--json", "domains").stdout == "[\n  \"alpha\",\n  \"beta\"\n]")

            #expect(
                try cli.run("find", "hello").stdout
                    == "Found 1 keys in domain 'beta': {\n    greeting = \"hello there\";\n}")
            #expect(
                try cli.run("find", "nothing-like-this").stdout
                    == "No domain, key, nor value containing 'nothing-like-this'")

            #expect(try cli.run("rename", "alpha", "name", "user").status == 0)
            #expect(try cli.run("read", "alpha", "user").stdout == "Zhuo")
            #expect(try cli.run("read", "alpha", "name").status == 1)

            #expect(try cli.run("delete", "alpha", "user").status == 0)
            #expect(try cli.run("read", "alpha").stdout == "{\n    volume = 0.5;\n}")
            #expect(try cli.run("delete", "beta").status == 0)
            #expect(try cli.run("domains").stdout == "alpha")
            let again = try cli.run("delete", "beta")
            #expect(again.status == 1)
            #expect(again.stderr.contains("Domain (beta) not found"))
        }

        @Test func missingDomainsAndKeysSayTheDomainDefaultPairDoesNotExist() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let missingKey = try cli.run("read", "nowhere", "key")
            #expect(missingKey.status == 1)
            #expect(missingKey.stderr == "The domain/default pair of (nowhere, key) does not exist")
            #expect(try cli.run("read-type", "nowhere", "key").status == 1)
            let missingDomain = try cli.run("read", "nowhere")
            #expect(missingDomain.status == 1)
            #expect(missingDomain.stderr == "Domain nowhere does not exist", "as the tool's article says")
            #expect(try cli.run("domains").stdout == "", "reading creates nothing")
        }

        /// The tool's article: bad input is one line saying what is wrong; a usage error adds a
        /// second pointing to `--help`; both exit 64.
        @Test func badInputIsOneLineAndAUsageErrorPointsToHelp() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let badValue = try cli.run("write", "d", "k", "-int", "x")
            #expect(badValue.status == 64)
            #expect(badValue.stderr.split(separator: "\n").count == 1, "\(badValue.stderr)")
            let unknown = try cli.run("frob")
            #expect(unknown.status == 64)
            #expect(
                unknown.stderr.split(separator: "\n") == [
                    "prefs: unknown command 'frob'", "Run 'prefs --help' for usage.",
                ])
        }

        @Test(arguments: ["xml", "binary", "json"])
        func exportThenImportRoundTrips(format: String) throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "source", "name", "Zhuo")
            try cli.run("write", "source", "count", "-int", "3")
            try cli.run("write", "source", "ratio", "-float", "0.25")
            try cli.run("write", "source", "on", "-bool", "yes")
            try cli.run("write", "source", "list", "-array", "a", "-int", "1")
            if format != "json" {  // JSON has no dates or data; they travel as strings
                try cli.run("write", "source", "when", "-date", "2024-05-01T12:00:00Z")
                try cli.run("write", "source", "blob", "-data", "00ff")
            }
            let file = cli.home.appendingPathComponent("export.\(format)").path
            #expect(try cli.run("export", "source", file, "--format", format).status == 0)
            #expect(try cli.run("import", "copy", file).status == 0)
            #expect(
                try cli.run("--json", "read", "copy").stdout
                    == (try cli.run("--json", "read", "source").stdout))
            #expect(try cli.run("read-type", "copy", "count").stdout == "Type is integer")

            // Through stdout and stdin too.
            let exported = try cli.run("export", "source", "-", "--format=\(format)")
            #expect(try cli.run("import", "piped", "-", input: exported.stdoutData).status == 0)
            #expect(try cli.run("read", "piped").stdout == (try cli.run("read", "source").stdout))
        }

        @Test func jsonOutputForScripts() throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "d", "when", "-date", "2024-05-01T12:00:00Z")
            try cli.run("write", "d", "on", "-bool", "no")
            #expect(
                try cli.run("--json", "read", "d").stdout
                    == "{\n  \"on\": false,\n  \"when\": \"2024-05-01T12:00:00Z\"\n}")
            #expect(try cli.run("--json", "read-type", "d", "on").stdout == "\"boolean\"")
        }

        @Test func helpDocumentsEveryVerbWithAnExample() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let help = try cli.run("--help")
            #expect(help.status == 0)
            for verb in [
                "read", "read-type", "write", "delete", "rename", "domains", "find", "export", "import",
                "watch",
            ] {
                #expect(help.stdout.contains("  \(verb)"), "\(verb) is listed")
                let one = try cli.run("help", verb)
                #expect(one.status == 0)
                #expect(one.stdout.contains("example: prefs \(verb)"), "\(verb) has an example")
            }
            #expect(help.stdout.contains("-array-add"))
        }

        @Test func watchSeesAnotherProcessesWrite() async throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "live", "volume", "-float", "0.1")
            let child = try cli.start(["watch", "live", "volume"])
            defer { child.killIfRunning() }
            try #require(await eventually { child.currentStderr.contains("watching live volume") })

            try cli.run("write", "live", "volume", "-float", "0.9")
            try cli.run("write", "live", "other", "ignored")
            try cli.run("delete", "live", "volume")
            #expect(
                await eventually { child.currentStdout == "volume = 0.9\nvolume deleted\n" },
                "\(child.currentStdout)")
            let ended = child.stop()
            #expect(ended.status == 0, "SIGTERM ends watch cleanly: \(ended.stderr)")
        }

        @Test func userDefaultsStoreInteroperatesWithPlainFoundationBothWays() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let helper = "PrefsTestHelper"
            // A suite of this test alone: on macOS, Foundation keeps suites in the real home folder.
            let scratch = ScratchDefaultsDomain("prefs.cli.tests")
            defer { scratch.remove() }
            let suite = scratch.name
            // A plain Foundation program writes; prefs reads.
            #expect(
                try cli.run(
                    "plain-write", suite, "fromFoundation", "string", "hi there", program: helper
                ).status == 0)
            #expect(
                try cli.run("--store", "userdefaults", "read", suite, "fromFoundation").stdout
                    == "hi there")
            #expect(try cli.run("--store", "userdefaults", "domains").stdout.contains(suite))
            // prefs writes; the plain Foundation program reads.
            #expect(
                try cli.run("--store", "userdefaults", "write", suite, "count", "-int", "12").status
                    == 0
            )
            #expect(try cli.run("plain-read", suite, "count", "int", program: helper).stdout == "12")
            #expect(
                try cli.run("--store=userdefaults", "write", suite, "on", "-bool", "true").status
                    == 0)
            #expect(try cli.run("plain-read", suite, "on", "bool", program: helper).stdout == "true")
        }

        @Test func aSQLiteStoreGivenByPath() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let file = cli.home.appendingPathComponent("app.sqlite").path
            #expect(try cli.run("--store", "sqlite:\(file)", "write", "app", "k", "-int", "1").status == 0)
            #expect(try cli.run("--store", "sqlite:\(file)", "read", "app", "k").stdout == "1")
            #expect(try cli.run("--store", "sqlite:\(file)", "domains").stdout == "app")
            let folder = cli.home.appendingPathComponent("many").path
            try cli.run("--store", "sqlite:\(folder)", "write", "one", "k", "v")
            try cli.run("--store", "sqlite:\(folder)", "write", "two", "k", "v")
            #expect(try cli.run("--store", "sqlite:\(folder)", "domains").stdout == "one, two")
        }
    }
#endif
