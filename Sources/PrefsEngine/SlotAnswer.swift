import Foundation
import PrefsModel

/// What a read slot holds (the low byte of its shape word).
///
/// A struct of named constants rather than an enum: a read takes the byte as it is, where an
/// enum's `init(rawValue:)` was a call of its own on every read.
@usableFromInline
package struct SlotKind: Equatable, Comparable, Sendable {
    @usableFromInline let rawValue: UInt8

    @usableFromInline init(rawValue: UInt8) { self.rawValue = rawValue }

    @inlinable static var empty: SlotKind { SlotKind(rawValue: 0) }
    @inlinable package static var missing: SlotKind { SlotKind(rawValue: 1) }
    @inlinable package static var bool: SlotKind { SlotKind(rawValue: 2) }
    @inlinable package static var integer: SlotKind { SlotKind(rawValue: 3) }
    @inlinable package static var double: SlotKind { SlotKind(rawValue: 4) }
    @inlinable static var date: SlotKind { SlotKind(rawValue: 5) }
    /// A string's UTF-8 bytes (up to 15), rebuilt on each read.
    @inlinable package static var string: SlotKind { SlotKind(rawValue: 6) }
    /// A small string's own two words.
    @inlinable package static var smallString: SlotKind { SlotKind(rawValue: 7) }

    /// The kind as it sits in a slot's shape word.
    var shape: UInt64 { UInt64(rawValue) }

    @usableFromInline
    package static func < (lhs: SlotKind, rhs: SlotKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A read slot's answer in its own words, for a typed read that builds its value from them
/// (``Preferences`` reads a plain key of a standard type so, without a `PropertyListValue`).
///
/// ```swift
/// if case .slot(let answer) = store.lookUp("theme"), answer.kind >= .string {
///     print(answer.text)  // dark
/// }
/// ```
@usableFromInline
package struct SlotAnswer: Sendable {
    /// The slot's shape word.
    ///
    /// The kind in the low byte (never `.empty`), a string's length in UTF-8 bytes in the
    /// third. Three words in all: an answer comes back in registers.
    @usableFromInline let shape: UInt64
    /// A number's bits, or a string's first word.
    @usableFromInline package let bits: UInt64
    /// A string's second word.
    @usableFromInline let more: UInt64

    @inlinable package var kind: SlotKind { SlotKind(rawValue: UInt8(truncatingIfNeeded: shape)) }
    /// A string's length in UTF-8 bytes.
    @inlinable var count: Int { Int(truncatingIfNeeded: shape >> 16 & 0xFF) }

    /// The string a `.string` or `.smallString` answer holds.
    @inlinable
    package var text: String {
        kind == .smallString ? Self.immortal(bits, more) : Self.string(bits, more, count: count)
    }

    /// The immortal small string whose own two words these are (a fill checked them).
    ///
    /// Taken out of memory (a move) rather than cast: a cast is a borrowed value, which the
    /// caller then copies with a retain call (one that does nothing for an immortal string, yet
    /// a quarter of a short string's read); a move hands the value over owned.
    @inlinable
    static func immortal(_ first: UInt64, _ second: UInt64) -> String {
        var words = (first, second)
        return withUnsafeMutablePointer(to: &words) {
            $0.withMemoryRebound(to: String.self, capacity: 1) { $0.move() }
        }
    }

    /// The answer as a stored value (`nil`: no value is stored).
    @usableFromInline
    package var value: PropertyListValue? {
        switch kind {
        case .string, .smallString: .string(text)
        case .bool: .bool(bits != 0)
        case .integer: .integer(Int64(bitPattern: bits))
        case .double: .double(Double(bitPattern: bits))
        case .date: .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
        default: nil  // no value stored
        }
    }

    /// The string whose UTF-8 is the first `count` bytes of two words (little-endian).
    @usableFromInline
    static func string(_ first: UInt64, _ second: UInt64, count: Int) -> String {
        var words = (first.littleEndian, second.littleEndian)
        return withUnsafeBytes(of: &words) { raw in
            String(
                decoding: UnsafeRawBufferPointer(rebasing: raw[..<count]).bindMemory(to: UInt8.self),
                as: UTF8.self)
        }
    }
}

/// A read as a store answered it: a ``SQLiteStore``'s read slot's words, without a lock, or a
/// stored value (a `SQLiteStore`'s cache, or any other store's ``PreferenceStore/value(forKey:)``).
///
/// ```swift
/// switch store.lookUp("theme") {
/// case .slot(let answer): print(answer.text)  // dark
/// case .cache(let value): print(value as Any)
/// }
/// ```
@usableFromInline
package enum StoredRead: Sendable {
    case slot(SlotAnswer)
    /// The stored value (`nil`: none stored).
    case cache(PropertyListValue?)

    /// The stored value, whichever answered.
    var value: PropertyListValue? {
        switch self {
        case .slot(let answer): answer.value
        case .cache(let value): value
        }
    }
}
