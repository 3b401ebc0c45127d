import Foundation

/// A type a key can read with `UserDefaults`' own conversions, for a key declared with
/// `reading: .likeUserDefaults`: the standard types `UserDefaults` has a getter for.
///
/// What each reads, besides its own stored form (anything else reads as the key's default, and
/// is reported):
///
/// | type | number | Boolean | string |
/// |---|---|---|---|
/// | `Bool` (`bool(forKey:)`) | not zero | itself | `true` when it starts, after spaces, a sign and zeros, with `Y`, `y`, `T`, `t` or a digit 1–9 (`"YES"`, `"true"`, `"1"`) |
/// | integers (`integer(forKey:)`) | a real is cut toward zero | 1 or 0 | the number it starts with, 0 when none |
/// | `Double`, `Float` (`double(forKey:)`) | itself | 1 or 0 | the number it starts with, 0 when none |
/// | `String` (`string(forKey:)`) | its decimal text, as `NSNumber` writes it | `"1"` or `"0"` | itself |
///
/// `URL` (`url(forKey:)`) reads a path string as a file URL (`~` expanded; a string with a scheme
/// is that URL, Prefs' own form), and data that is a
/// keyed archive of a URL (how `UserDefaults.set(_:forKey:)` stores a URL on Apple platforms) as
/// that URL. A number out of an integer type's range reads as the default.
///
/// The standard types above conform; the protocol has no requirement of its own (the conversions
/// are the library's), so a type of yours reads with its own `deserialize` alone.
///
/// ```swift
/// let debugMenu = Preferences.Key<Bool>("debugMenu", default: false, reading: .likeUserDefaults)
/// // a stored "YES" reads as true
/// ```
public protocol UserDefaultsReadable: PreferenceValue {}

/// What `UserDefaults`' getters do, for the standard types of ``UserDefaultsReadable``.
protocol LooseReading: Sendable {
    /// The value `UserDefaults`' getter for this type gives for `stored`, or `nil` where it
    /// gives nothing (the key then reads as its default).
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> Self?
}

extension Bool: UserDefaultsReadable, LooseReading {
    /// `bool(forKey:)`'s reading: see ``UserDefaultsReadable``.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> Bool? {
        switch stored {
        case .bool(let flag): flag
        case .integer(let number): number != 0
        case .unsignedInteger(let number): number != 0
        case .double(let number): number != 0
        case .string(let text): NumericText(text).isTrue
        default: nil
        }
    }
}

extension LooseReading where Self: FixedWidthInteger & Codable {
    /// `integer(forKey:)`'s reading: see ``UserDefaultsReadable``.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> Self? {
        switch stored {
        case .integer(let number): Self(exactly: number)
        case .unsignedInteger(let number): Self(exactly: number)
        case .double(let number): Self(exactly: number.rounded(.towardZero))
        case .bool(let flag): flag ? 1 : 0
        case .string(let text): NumericText(text).integer.flatMap { Self(exactly: $0) } ?? 0
        default: nil
        }
    }
}

extension Int: UserDefaultsReadable, LooseReading {}
extension Int8: UserDefaultsReadable, LooseReading {}
extension Int16: UserDefaultsReadable, LooseReading {}
extension Int32: UserDefaultsReadable, LooseReading {}
extension Int64: UserDefaultsReadable, LooseReading {}
extension UInt: UserDefaultsReadable, LooseReading {}
extension UInt8: UserDefaultsReadable, LooseReading {}
extension UInt16: UserDefaultsReadable, LooseReading {}
extension UInt32: UserDefaultsReadable, LooseReading {}
extension UInt64: UserDefaultsReadable, LooseReading {}

extension LooseReading where Self: BinaryFloatingPoint & Codable {
    /// `double(forKey:)`'s and `float(forKey:)`'s reading: see ``UserDefaultsReadable``.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> Self? {
        switch stored {
        case .double(let number): Self(number)
        case .integer(let number): Self(number)
        case .unsignedInteger(let number): Self(number)
        case .bool(let flag): flag ? 1 : 0
        case .string(let text): Self(NumericText(text).real ?? 0)
        default: nil
        }
    }
}

extension Double: UserDefaultsReadable, LooseReading {}
extension Float: UserDefaultsReadable, LooseReading {}

extension String: UserDefaultsReadable, LooseReading {
    /// `string(forKey:)`'s reading: see ``UserDefaultsReadable``.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> String? {
        switch stored {
        case .string(let text): text
        case .integer(let number): String(number)
        case .unsignedInteger(let number): String(number)
        case .double(let number): NSNumber(value: number).stringValue
        case .bool(let flag): flag ? "1" : "0"
        default: nil
        }
    }
}

extension URL: UserDefaultsReadable, LooseReading {
    /// `url(forKey:)`'s reading: see ``UserDefaultsReadable``.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> URL? {
        switch stored {
        case .string(let text) where text.hasPrefix("\""):
            nil  // Defaults' JSON string: the type's own reading takes it
        case .string(let text) where !text.isEmpty:
            // A URL with a scheme is itself (Prefs' own form); anything else is a path.
            if let url = URL(string: text), url.scheme != nil {
                url
            } else {
                URL(fileURLWithPath: (text as NSString).expandingTildeInPath)
            }
        case .data(let archive):
            try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive) as URL?
        default: nil
        }
    }
}

extension Optional: UserDefaultsReadable where Wrapped: UserDefaultsReadable {}

extension Optional: LooseReading where Wrapped: LooseReading {
    /// The wrapped type's reading.
    static func readLikeUserDefaults(_ stored: PropertyListValue) -> Wrapped?? {
        Wrapped.readLikeUserDefaults(stored).map { .some($0) }
    }
}

/// A string read as `NSString`'s `boolValue`, `integerValue` and `doubleValue` read it: leading
/// spaces skipped, then an optional sign, then the number the text starts with (the rest ignored).
struct NumericText {
    private let scalars: [Unicode.Scalar]

    init(_ text: String) {
        scalars = Array(text.unicodeScalars.drop { $0 == " " || $0 == "\t" || $0 == "\n" })
    }

    /// `boolValue`: the first character after a sign and leading zeros is Y, y, T, t or 1–9.
    var isTrue: Bool {
        var rest = scalars[...]
        if let first = rest.first, first == "+" || first == "-" { rest = rest.dropFirst() }
        rest = rest.drop { $0 == "0" }
        guard let first = rest.first else { return false }
        return "YyTt123456789".unicodeScalars.contains(first)
    }

    /// `integerValue`: the whole number the text starts with, clamped to `Int`'s range; `nil`
    /// when it starts with none.
    var integer: Int? {
        var rest = scalars[...]
        let negative = rest.first == "-"
        if let first = rest.first, first == "+" || first == "-" { rest = rest.dropFirst() }
        let digits = rest.prefix { ("0"..."9").contains($0) }
        guard !digits.isEmpty else { return nil }
        var value = 0
        for digit in digits {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(truncatingIfNeeded: digit.value - 48))
            if overflow1 || overflow2 { return negative ? .min : .max }
            value = sum
        }
        return negative ? -value : value
    }

    /// `doubleValue`: the decimal number the text starts with (digits, a point, an exponent);
    /// `nil` when it starts with none.
    var real: Double? {
        var end = 0
        if end < scalars.count, scalars[end] == "+" || scalars[end] == "-" { end += 1 }
        let mantissaStart = end
        while end < scalars.count, ("0"..."9").contains(scalars[end]) { end += 1 }
        if end < scalars.count, scalars[end] == "." {
            end += 1
            while end < scalars.count, ("0"..."9").contains(scalars[end]) { end += 1 }
        }
        guard end > mantissaStart, scalars[mantissaStart..<end].contains(where: { $0 != "." }) else {
            return nil
        }
        var exponentEnd = end
        if exponentEnd < scalars.count, scalars[exponentEnd] == "e" || scalars[exponentEnd] == "E" {
            exponentEnd += 1
            if exponentEnd < scalars.count, scalars[exponentEnd] == "+" || scalars[exponentEnd] == "-" {
                exponentEnd += 1
            }
            let digitsStart = exponentEnd
            while exponentEnd < scalars.count, ("0"..."9").contains(scalars[exponentEnd]) { exponentEnd += 1 }
            if exponentEnd > digitsStart { end = exponentEnd }
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[0..<end])
        return Double(String(text))
    }
}
