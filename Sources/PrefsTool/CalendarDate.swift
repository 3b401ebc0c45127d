import Foundation

/// A date as the fields of the proleptic Gregorian calendar in UTC, whole seconds: the one
/// calendar every date the tool prints or parses goes through.
///
/// Property lists store a date as seconds since 2001-01-01 00:00:00 UTC, and XML plists (Apple's,
/// Python's `plistlib`) spell those seconds in the proleptic Gregorian calendar for every year.
/// Foundation's formatters switch to the Julian calendar before October 1582, so a file dated
/// 0001-01-01 would read back as 0001-01-03 in one command and 0001-01-01 in another. The
/// arithmetic here has no cut-over: `read`, `--json`, `-date`, `import` and `export` agree.
package struct CalendarDate: Equatable {
    package var year: Int64
    package var month: Int
    package var day: Int
    package var hour = 0
    package var minute = 0
    package var second = 0

    /// Days from 1970-01-01 to 2001-01-01, the reference date property lists count from.
    private static let referenceDay: Int64 = 11_323
    /// Beyond this many seconds from the reference date (about 3 million years) a date is
    /// printed by its seconds: the calendar's fields would not mean much, and stay exact here.
    private static let representableSeconds = 1e14

    /// The fields of `date`, its seconds rounded down; `nil` for a date no calendar can name
    /// (not a number, or millions of years away).
    package init?(_ date: Date) {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, abs(seconds) < Self.representableSeconds else { return nil }
        let whole = Int64(seconds.rounded(.down))
        let (days, secondOfDay) = Self.floorDivide(whole, 86_400)
        (year, month, day) = Self.civil(fromDays: days + Self.referenceDay)
        // A second of the day, 0 ..< 86,400: each part fits any Int.
        hour = Int(truncatingIfNeeded: secondOfDay / 3600)
        minute = Int(truncatingIfNeeded: secondOfDay % 3600 / 60)
        second = Int(truncatingIfNeeded: secondOfDay % 60)
    }

    init(year: Int64, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        (self.year, self.month, self.day) = (year, month, day)
        (self.hour, self.minute, self.second) = (hour, minute, second)
    }

    /// The instant these fields name in UTC.
    var date: Date {
        let days = Self.days(year: year, month: month, day: day) - Self.referenceDay
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSinceReferenceDate: Double(seconds))
    }

    /// Whether the day exists in the calendar (no February 30th) and the time of day is real.
    var isReal: Bool {
        guard (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute),
            (0...59).contains(second)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (1...lengths[month - 1]).contains(day)
    }

    // MARK: - Text

    /// `2024-05-01 12:00:00 +0000`, as `defaults read` prints a date.
    package static func plistText(_ date: Date) -> String {
        guard let fields = CalendarDate(date) else { return unnamed(date) }
        return "\(fields.dayText) \(fields.timeText) +0000"
    }

    /// `2024-05-01T12:00:00Z`, as XML plists and the tool's JSON write a date.
    package static func iso8601(_ date: Date) -> String {
        guard let fields = CalendarDate(date) else { return unnamed(date) }
        return "\(fields.dayText)T\(fields.timeText)Z"
    }

    private static func unnamed(_ date: Date) -> String {
        "\(date.timeIntervalSinceReferenceDate) seconds from 2001-01-01"
    }

    private var dayText: String {
        let digits = String(year.magnitude)
        let padded = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return "\(year < 0 ? "-" : "")\(padded)-\(Self.two(month))-\(Self.two(day))"
    }

    private var timeText: String { "\(Self.two(hour)):\(Self.two(minute)):\(Self.two(second))" }

    private static func two(_ number: Int) -> String { number < 10 ? "0\(number)" : "\(number)" }

    /// The instant a date written as the tool takes it names; `nil` unless it is one, and real.
    ///
    /// `2024-05-01` (years of four to nine digits, after an optional `-`), then optionally a time after `T` or a space (`12:00`, `12:00:00`,
    /// `12:00:00.250`), then optionally a zone (`Z`, `UTC`, `GMT`, `+0200`, `+02:00`, `-05`);
    /// without a zone the time is UTC. The day must exist and the time of day be real.
    package static func parse(_ text: String) -> Date? {
        var scanner = FieldScanner(Array(text.utf8))
        let negative = scanner.take("-")
        // At most nine digits: a billion years is 3·10¹⁶ seconds, well inside an `Int64`, where
        // a year of twelve digits overflowed it (and stopped the tool) on the way to seconds.
        guard let yearDigits = scanner.digits(atLeast: 4, atMost: 9), let magnitude = Int64(yearDigits),
            scanner.take("-"), let month = scanner.number(digits: 2), scanner.take("-"),
            let day = scanner.number(digits: 2)
        else { return nil }
        var fields = CalendarDate(year: negative ? -magnitude : magnitude, month: month, day: day)
        var fraction = 0.0
        var offsetMinutes = 0
        if scanner.take("T") || scanner.take(" ") {
            guard let hour = scanner.number(digits: 2), scanner.take(":"),
                let minute = scanner.number(digits: 2)
            else { return nil }
            (fields.hour, fields.minute) = (hour, minute)
            if scanner.take(":") {
                guard let second = scanner.number(digits: 2) else { return nil }
                fields.second = second
                if scanner.take(".") || scanner.take(",") {
                    guard let digits = scanner.digits(atLeast: 1, atMost: 9) else { return nil }
                    fraction = Double("0." + digits) ?? 0
                }
            }
            _ = scanner.take(" ")
            guard let offset = scanner.zoneOffset() else { return nil }
            offsetMinutes = offset
        }
        // The fields must be real as written; the zone then moves the instant.
        guard scanner.isAtEnd, fields.isReal else { return nil }
        return fields.date.addingTimeInterval(fraction - Double(offsetMinutes * 60))
    }

    // MARK: - Arithmetic

    /// Days since 1970-01-01 of a day of the proleptic Gregorian calendar.
    ///
    /// Years are counted from March, so the leap day ends a year, and in 400-year eras of
    /// 146,097 days.
    private static func days(year: Int64, month: Int, day: Int) -> Int64 {
        let marchYear = month <= 2 ? year - 1 : year
        let (era, yearOfEra) = floorDivide(marchYear, 400)
        let monthFromMarch = Int64((month + 9) % 12)
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year, month and day `days` after 1970-01-01: the inverse of `days(year:month:day:)`.
    private static func civil(fromDays days: Int64) -> (Int64, Int, Int) {
        let (era, dayOfEra) = floorDivide(days + 719_468, 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        // 1 ... 31 and 1 ... 12.
        let day = Int(truncatingIfNeeded: dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        let month = Int(truncatingIfNeeded: monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
        return (quotient, value - quotient * divisor)
    }
}

/// Reads a date's fields from left to right.
private struct FieldScanner {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { position == bytes.count }

    mutating func take(_ character: Character) -> Bool {
        guard !isAtEnd, bytes[position] == character.asciiValue else { return false }
        position += 1
        return true
    }

    mutating func digits(atLeast minimum: Int, atMost maximum: Int) -> String? {
        let start = position
        while !isAtEnd, position - start < maximum, (0x30...0x39).contains(bytes[position]) { position += 1 }
        guard position - start >= minimum else { return nil }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    mutating func number(digits count: Int) -> Int? {
        digits(atLeast: count, atMost: count).flatMap { Int($0) }
    }

    /// The zone at the end of the text, in minutes east of UTC: 0 when there is none.
    mutating func zoneOffset() -> Int? {
        if isAtEnd || take("Z") { return 0 }
        for name in ["UTC", "GMT"] where bytes[position...].starts(with: name.utf8) {
            position += name.utf8.count
            return 0
        }
        let sign: Int
        if take("+") {
            sign = 1
        } else if take("-") {
            sign = -1
        } else {
            return nil
        }
        guard let hours = number(digits: 2), hours <= 23 else { return nil }
        _ = take(":")
        let minutes = isAtEnd ? 0 : number(digits: 2)
        guard let minutes, minutes <= 59 else { return nil }
        return sign * (hours * 60 + minutes)
    }
}
