import Foundation

/// A key as stores keep it: its exact sequence of Unicode scalars.
///
/// Swift's `String ==` treats canonically equivalent strings as equal, so `"é"` (U+00E9) and
/// `"e\u{301}"` would be one key in a `[String: …]` dictionary, while SQLite, PostgreSQL, plist
/// files and `UserDefaults` on Apple platforms keep two. Every map of stored keys in Prefs is
/// keyed by `StoreKey`, which compares and hashes the UTF-8 bytes, so the two stay two.
///
/// ```swift
/// let snapshot = store.snapshot()
/// snapshot["volume"]                      // a string literal is a StoreKey
/// snapshot[StoreKey(name)]                // any String
/// StoreKey("\u{E9}") == StoreKey("e\u{301}")  // false
/// ```
public struct StoreKey: Hashable, Comparable, Sendable, ExpressibleByStringInterpolation,
    CustomStringConvertible
{
    /// The key's name, scalars exactly as given.
    public let name: String

    /// The key for `name`.
    ///
    /// ```swift
    /// let key = StoreKey("volume")
    /// ```
    @inlinable
    public init(_ name: String) {
        self.name = name
    }

    /// The key for a string literal.
    ///
    /// ```swift
    /// let key: StoreKey = "volume"
    /// ```
    @inlinable
    public init(stringLiteral name: String) {
        self.name = name
    }

    /// Equal when the UTF-8 bytes (so the Unicode scalars) are the same.
    public static func == (lhs: StoreKey, rhs: StoreKey) -> Bool {
        // Two strings with the same representation (the same small string, or one shared
        // buffer) hold the same bytes: the common case of a lookup, decided without a call.
        if MemoryLayout<String>.size == 16 {
            let same = withUnsafeBytes(of: lhs.name) { left in
                withUnsafeBytes(of: rhs.name) { right in
                    left.loadUnaligned(as: UInt64.self) == right.loadUnaligned(as: UInt64.self)
                        && left.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                            == right.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                }
            }
            if same { return true }
        }
        let left = lhs.name.utf8
        let right = rhs.name.utf8
        guard left.count == right.count else { return false }
        // Native strings are contiguous UTF-8: one `memcmp`, no copy.
        let compared = left.withContiguousStorageIfAvailable { l in
            right.withContiguousStorageIfAvailable { r in
                l.isEmpty || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0
            }
        }
        if let compared, let equal = compared { return equal }
        return left.elementsEqual(right)
    }

    /// Hashes the UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        let hashed: Void? = name.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            for byte in name.utf8 { hasher.combine(byte) }
        }
    }

    /// Orders by Unicode scalar values (UTF-8 byte order), as SQLite's `BINARY` collation does.
    public static func < (lhs: StoreKey, rhs: StoreKey) -> Bool {
        let left = lhs.name.utf8
        let right = rhs.name.utf8
        // Native strings are contiguous UTF-8: one `memcmp` (a checkpoint sorts thousands of keys).
        let compared = left.withContiguousStorageIfAvailable { l in
            right.withContiguousStorageIfAvailable { r in
                let common = min(l.count, r.count)
                let order = common == 0 ? 0 : memcmp(l.baseAddress!, r.baseAddress!, common)
                return order != 0 ? order < 0 : l.count < r.count
            }
        }
        if let compared, let precedes = compared { return precedes }
        return left.lexicographicallyPrecedes(right)
    }

    /// The name.
    public var description: String { name }
}

extension Sequence where Element == String {
    /// The names sorted by Unicode scalar values, with canonically equivalent names kept apart.
    package func sortedByScalars() -> [String] {
        // Sorted in place: listing a large store makes no second copy of its names.
        var names = Array(self)
        names.sort { StoreKey($0) < StoreKey($1) }
        return names
    }
}
