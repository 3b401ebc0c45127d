#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import PrefsTool
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does", item 3: every date the
    /// tool prints or reads goes through one calendar, the proleptic Gregorian that XML plists use.
    @Suite struct CLICalendarTests {
        /// 0001-01-01 00:00:00 UTC in the proleptic Gregorian calendar: 730,485 days (2,000 years
        /// of 365.2425 days) before 2001-01-01, as Python's `plistlib` writes it in a binary plist.
        static let firstDayOfYearOne = Date(timeIntervalSinceReferenceDate: -63_113_904_000)

        @Test func aBinaryPlistDatedYearOneReadsBackAsYearOneEverywhere() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let file = cli.home.appendingPathComponent("old.plist")
            try PropertyListSerialization.data(
                fromPropertyList: ["first": Self.firstDayOfYearOne], format: .binary, options: 0
            ).write(to: file)
            #expect(try cli.run("import", "old", file.path).status == 0)
            #expect(try cli.run("read", "old", "first").stdout == "0001-01-01 00:00:00 +0000")
            #expect(try cli.run("--json", "read", "old", "first").stdout == "\"0001-01-01T00:00:00Z\"")
            #expect(try cli.run("export", "old", "-").stdout.contains("<date>0001-01-01T00:00:00Z</date>"))

            // `-date` and an XML import of the same day store the same instant.
            #expect(try cli.run("write", "old", "written", "-date", "0001-01-01").status == 0)
            let xml = cli.home.appendingPathComponent("old.xml")
            try Data(
                """
                <plist version="1.0"><dict><key>imported</key><date>0001-01-01T00:00:00Z</date></dict></plist>
                """.utf8
            ).write(to: xml)
            #expect(try cli.run("import", "old", xml.path).status == 0)
            let binary = try cli.run("export", "old", "-", "--format", "binary")
            let exported = try PropertyListSerialization.propertyList(from: binary.stdoutData, format: nil)
            let dates = exported as? [String: Date]
            #expect(dates?["first"] == Self.firstDayOfYearOne)
            #expect(dates?["written"] == Self.firstDayOfYearOne)
            #expect(dates?["imported"] == Self.firstDayOfYearOne)
        }

        /// From 1583 on the proleptic calendar is Foundation's Gregorian calendar: the fields agree
        /// with it for instants spread over eight centuries.
        @Test func afterTheCutOverTheFieldsAreFoundationsGregorianFields() throws {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
            var generator = SeededGenerator(state: 1582)
            let start = try #require(calendar.date(from: DateComponents(year: 1583, month: 1, day: 1)))
            let end = try #require(calendar.date(from: DateComponents(year: 2400, month: 1, day: 1)))
            for _ in 0..<2000 {
                let seconds = Double.random(
                    in: start.timeIntervalSinceReferenceDate..<end.timeIntervalSinceReferenceDate,
                    using: &generator
                ).rounded(.down)
                let date = Date(timeIntervalSinceReferenceDate: seconds)
                let expected = calendar.dateComponents(
                    [.year, .month, .day, .hour, .minute, .second], from: date)
                let fields = try #require(CalendarDate(date))
                #expect(
                    [Int(fields.year), fields.month, fields.day, fields.hour, fields.minute, fields.second]
                        == [
                            expected.year, expected.month, expected.day, expected.hour, expected.minute,
                            expected.second,
                        ],
                    "\(date)")
            }
        }

        /// Printing and parsing invert each other for any whole second from 9999 BC to AD 9999,
        /// in both of the tool's spellings.
        @Test func printedDatesParseBackToTheSameInstant() {
            var generator = SeededGenerator(state: 2001)
            for _ in 0..<5000 {
                let seconds = Double(Int64.random(in: -378_000_000_000...252_000_000_000, using: &generator))
                let date = Date(timeIntervalSinceReferenceDate: seconds)
                #expect(CalendarDate.parse(CalendarDate.plistText(date)) == date, "\(seconds)")
                #expect(CalendarDate.parse(CalendarDate.iso8601(date)) == date, "\(seconds)")
            }
        }

        @Test func zonesAndFractionsMoveTheInstant() throws {
            let noon = try #require(CalendarDate.parse("2024-05-01T12:00:00Z"))
            #expect(CalendarDate.parse("2024-05-01 14:00:00 +0200") == noon)
            #expect(CalendarDate.parse("2024-05-01T07:30:00-04:30") == noon)
            #expect(CalendarDate.parse("2024-05-01 12:00:00") == noon)
            #expect(CalendarDate.parse("2024-05-01T12:00") == noon)
            #expect(CalendarDate.parse("2024-05-01T12:00:00.25Z") == noon.addingTimeInterval(0.25))
            #expect(CalendarDate.parse("2024-04-30T23:30:00-12:30") == noon)
            #expect(CalendarDate.parse("2024-05-01T12:00:00Q") == nil)
            #expect(CalendarDate.parse("2024-05-01T12:00:00Z trailing") == nil)
            #expect(CalendarDate.parse("24-05-01") == nil)
        }

        /// A year of ten or more digits is not a date the tool takes (it overflowed the seconds
        /// and stopped the tool), from `-date` or from a file; nine digits still are.
        @Test func aYearTooFarAwayIsRefusedNotATrap() throws {
            #expect(CalendarDate.parse("999999999-12-31") != nil)
            #expect(CalendarDate.parse("-999999999-01-01") != nil)
            #expect(CalendarDate.parse("300000000000-01-01") == nil)
            #expect(CalendarDate.parse("-300000000000-01-01T00:00:00Z") == nil)

            let cli = try CLI()
            defer { cli.remove() }
            #expect(try cli.run("write", "far", "kept", "-date", "2024-05-01").status == 0)
            let before = try cli.everything()
            let written = try cli.run("write", "far", "when", "-date", "300000000000-01-01")
            #expect(written.status == 64, "\(written.stderr)")
            let file = cli.home.appendingPathComponent("far.plist")
            try """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>when</key><date>300000000000-01-01T00:00:00Z</date></dict></plist>
            """.write(to: file, atomically: true, encoding: .utf8)
            let imported = try cli.run("import", "far", file.path)
            #expect(imported.status != 0 && imported.stderr.contains("not a date"), "\(imported.stderr)")
            #expect(try cli.everything() == before)
        }

        @Test func anInstantNoCalendarNamesStillPrints() {
            let far = Date(timeIntervalSinceReferenceDate: 1e300)
            #expect(CalendarDate(far) == nil)
            #expect(CalendarDate.plistText(far).contains("seconds from 2001-01-01"))
        }
    }
#endif
