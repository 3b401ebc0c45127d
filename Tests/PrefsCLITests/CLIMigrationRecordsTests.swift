#if os(macOS) || os(Linux)
    import Foundation
    import Prefs
    import PrefsTestSupport
    import Testing

    /// Issue 49, item 3: the records of the migrations that ran are the library's bookkeeping;
    /// the tool leaves them out of its listings and shows them only when asked.
    @Suite struct CLIMigrationRecordsTests {
        final class Settings: PreferenceGroup {
            @Preference var age = 0
        }

        @Test func theToolShowsMigrationRecordsOnlyWhenAsked() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let folder = cli.home.appendingPathComponent("config/prefs")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                let prefs = Preferences(
                    store: try SQLiteStore(
                        path: folder.appendingPathComponent("com.example.app.sqlite").path),
                    diagnostics: PreferenceDiagnostics { _ in })
                try prefs.store.setValue(.integer(41), forKey: "old_age")
                try Settings(preferences: prefs).migrate(from: ["age": "old_age"])
                try prefs.migrate([.remove(version: 1, "legacyFlag")])
            }
            func shows(_ arguments: String...) throws -> String {
                let output = try cli.run(arguments)
                #expect(output.status == 0, "\(arguments): \(output.stderr)")
                return output.stdout
            }
            for listing in [
                try shows("read", "com.example.app"), try shows("--json", "read"),
                try shows("export", "com.example.app", "-"), try shows("find", "age"),
                try shows("describe", "com.example.app"),
            ] {
                #expect(listing.contains("age"), "\(listing)")
                #expect(!listing.contains("igration"), "no record listed: \(listing)")
            }

            // Replacing the whole domain keeps them.
            #expect(try cli.run("write", "com.example.app", "{ theme = dark; }").status == 0)
            #expect(try shows("read", "com.example.app").contains("theme"))

            let asked = try shows("migrations", "com.example.app")
            #expect(asked.contains("Settings.age <- old_age: 20"), "\(asked)")
            #expect(asked.contains("PrefsMigrationVersion step 1: 20"), "\(asked)")
            let json = try shows("--json", "migrations", "com.example.app")
            #expect(json.contains("\"PrefsMigrationVersion step 1\""), "\(json)")
        }
    }
#endif
