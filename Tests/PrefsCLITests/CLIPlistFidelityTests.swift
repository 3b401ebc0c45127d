#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does": dates, numbers and
    /// `--json watch`.
    @Suite struct CLIPlistFidelityTests {
        @Test(arguments: [
            "2024-02-30", "2023-02-29", "2024-13-01", "2024-04-31 12:00:00 +0000", "2024-01-01 24:00:00",
        ])
        func impossibleDatesAreRefused(text: String) throws {
            let cli = try CLI()
            defer { cli.remove() }
            let result = try cli.run("write", "d", "when", "-date", text)
            #expect(result.status == 64, "\(result.stderr)")
            #expect(try cli.run("read", "d", "when").status != 0, "nothing stored")
        }

        @Test func aLeapDayIsADate() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "when", "-date", "2024-02-29").status == 0)
            #expect(try cli.run("read", "d", "when").stdout == "2024-02-29 00:00:00 +0000")
        }

        @Test func negativeZeroKeepsItsSign() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "zero", "-float", "-0").status == 0)
            #expect(try cli.run("read", "d", "zero").stdout == "-0")
            #expect(try cli.run("--json", "read", "d", "zero").stdout == "-0.0")
            let exported = try cli.run("export", "d", "-")
            #expect(exported.stdout.contains("<real>-0.0</real>"), "\(exported.stdout)")
        }

        @Test func aFloatBeyondADoubleIsRefused() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let result = try cli.run("write", "d", "big", "-float", "1e999")
            #expect(result.status == 64)
            #expect(result.stderr.contains("outside the range of a double"), "\(result.stderr)")
            #expect(try cli.run("write", "d", "big", "-float", "inf").status == 0, "infinity said as such")
        }

        @Test func aJSONExportOfNaNFailsClearly() throws {
            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "d", "ratio", "-float", "nan").status == 0)
            let result = try cli.run("export", "d", "-", "--format", "json")
            #expect(result.status == 64)
            #expect(result.stderr.contains("ratio"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }

        @Test func jsonWatchPrintsStringsUnaltered() async throws {
            let cli = try CLI()
            defer { cli.remove() }
            try cli.run("write", "live", "text", "start")
            let child = try cli.start(["--json", "watch", "live"])
            defer { child.killIfRunning() }
            try #require(await eventually { child.currentStderr.contains("watching live") })
            try cli.run("write", "live", "text", "two  spaces\tand a tab")
            #expect(
                await eventually { child.currentStdout.contains(#""value":"two  spaces\tand a tab""#) },
                "\(child.currentStdout)")
            #expect(child.stop().status == 0, "SIGTERM ends watch cleanly")
        }
    }
#endif
