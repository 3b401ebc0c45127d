#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport

    /// The built `prefs` binary run on an isolated HOME and XDG_CONFIG_HOME, one per test, and on
    /// a throwaway store: `PREFS_STORE` names the test's own folder, which on Linux is the default
    /// store's place anyway, and on macOS keeps the tests out of the developer's `UserDefaults`
    /// (cfprefsd ignores `HOME`).
    struct CLI {
        let home: URL

        init() throws {
            home = ScratchFolder.make("cli")
            // `config` is a link, as a dotfile manager makes `~/.config`: the default store's
            // folder goes through it.
            let dotfiles = home.appendingPathComponent("dotfiles/config")
            try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: home.appendingPathComponent("config").path, withDestinationPath: dotfiles.path)
        }

        var environment: [String: String?] {
            [
                "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
                "PREFS_STORE": "sqlite:" + home.appendingPathComponent("config/prefs").path,
            ]
        }

        /// Starts `prefs` (or the helper), reading its output as it runs.
        func start(_ arguments: [String], program: String = "prefs") throws -> ChildProcess {
            try ChildProcess.start(Products.executable(program), arguments, environment: environment)
        }

        /// Runs `prefs` (or the helper) to the end, feeding `input` on stdin.
        @discardableResult
        func run(_ arguments: String..., program: String = "prefs", input: Data? = nil) throws -> ChildOutput
        {
            try run(arguments, program: program, input: input)
        }

        @discardableResult
        func run(_ arguments: [String], program: String = "prefs", input: Data? = nil) throws -> ChildOutput {
            try ChildProcess.run(
                Products.executable(program), arguments, environment: environment, input: input ?? Data())
        }

        /// Everything in the store, as `prefs read` prints it: to check that nothing changed.
        func everything() throws -> String {
            let all = try run("--json", "read")
            return all.stdout + "|" + (try run("domains").stdout)
        }

        func remove() {
            try? FileManager.default.removeItem(at: home)
        }
    }
#endif
