import Foundation
import PrefsSupport

/// The size limit of a `UserDefaults` domain, and the running estimate a store keeps of its
/// domain's size, so a write that `UserDefaults` would drop is refused instead.
extension UserDefaultsStore {
    /// The largest a domain may grow on this platform, in bytes: Apple's `UserDefaults` refuses
    /// (and on tvOS ends the app for) a domain that reaches it.
    ///
    /// tvOS and watchOS: 1,000,000 (tvOS warns at 512 kB and ends the app at 1 MB; watchOS
    /// refuses writes at 1 MiB). Other Apple platforms: 4 MiB, where CFPreferences refuses writes.
    /// Linux has no limit of its own; the same 4 MiB applies, so a program behaves there as on
    /// a Mac.
    package static var platformSizeLimit: Int {
        #if os(tvOS) || os(watchOS)
            1_000_000
        #else
            4 << 20
        #endif
    }

    /// The size a domain holding `objects` is estimated at (an upper bound of its binary
    /// property list), as the store counts it.
    ///
    /// ```swift
    /// UserDefaultsStore.estimatedSize(ofDomain: ["volume": 0.5])  // 84
    /// ```
    package static func estimatedSize(ofDomain objects: [String: Any]) -> Int {
        DomainSizeLedger(domain: objects, at: 0).total
    }

    /// How long a count of the domain is trusted before the store counts it again, to take in
    /// what other writers (another process, plain `UserDefaults` code) added: a second once the
    /// domain is past half its limit, ten below that.
    ///
    /// Compared without doubling `total`: an estimate that counts every reference to one large
    /// value passes 2³⁰ (and saturates) long before the domain does, and doubled it would trap
    /// on a 32-bit `Int` (every Apple Watch).
    static func recountInterval(total: Int, limit: Int) -> UInt64 {
        total >= limit - limit / 2 ? 1_000_000_000 : 10_000_000_000
    }
}

/// A running estimate of a domain's size as Apple stores it (a binary property list): each
/// entry's size, and their total, counted once from the domain and kept up to date by each
/// write, so no write encodes the whole domain.
///
/// Every size is an upper bound: strings, data and numbers are counted at their encoded width,
/// each object with the widest reference and offset a domain under 4 GiB can need, and nothing
/// shared (a binary plist stores equal values once). So the estimate never falls short of what
/// the writes added.
struct DomainSizeLedger {
    /// The estimated size of the whole domain, in bytes.
    private(set) var total: Int
    /// Each key's entry (its name and value) as counted.
    private var entries: [StoreKey: Int]
    /// When the domain was last counted (`DispatchTime`'s uptime, in nanoseconds).
    let countedAt: UInt64

    /// The binary plist's header, trailer and top dictionary, whatever the entries.
    static let fixedSize = 8 + 32 + 1 + 9 + 8

    /// Counts `domain` (a persistent domain as `UserDefaults` returns it) at `now`.
    init(domain: [String: Any], at now: UInt64) {
        var entries: [StoreKey: Int] = [:]
        entries.reserveCapacity(domain.count)
        var total = Self.fixedSize
        for (key, object) in domain {
            let size = Self.entrySize(key: key, object: object)
            entries[StoreKey(key)] = size
            total = total.addingSaturated(size)
        }
        self.entries = entries
        self.total = total
        self.countedAt = now
    }

    /// Whether the count is too old to trust at `now` (see ``UserDefaultsStore/recountInterval(total:limit:)``).
    func isStale(at now: UInt64, limit: Int) -> Bool {
        now &- countedAt > UserDefaultsStore.recountInterval(total: total, limit: limit)
    }

    /// The total after `writes` (a `nil` value removes its key), and each key's new size.
    func projected(_ writes: [(key: StoreKey, value: PropertyListValue?)]) -> (
        total: Int, sizes: [(key: StoreKey, size: Int?)]
    ) {
        var total = self.total
        var written: [StoreKey: Int?] = [:]
        var sizes: [(key: StoreKey, size: Int?)] = []
        sizes.reserveCapacity(writes.count)
        for (key, value) in writes {
            let before = written[key] ?? entries[key]
            let after = value.map { Self.entrySize(key: key.name, value: $0) }
            total = total.addingSaturated(after ?? 0).addingSaturated(-(before ?? 0))
            written[key] = .some(after)
            sizes.append((key, after))
        }
        return (total, sizes)
    }

    /// Records writes whose sizes ``projected(_:)`` gave.
    mutating func record(_ projection: (total: Int, sizes: [(key: StoreKey, size: Int?)])) {
        for (key, size) in projection.sizes { entries[key] = size }
        total = projection.total
    }

    /// The size of the entry `key` = `value` in a binary plist's top dictionary.
    static func entrySize(key: String, value: PropertyListValue) -> Int {
        objectSize(string: key).addingSaturated(objectSize(value))
    }

    /// The size of an entry as `UserDefaults` holds it: a property-list object, or (for one the
    /// value model does not take) its own binary encoding.
    static func entrySize(key: String, object: Any) -> Int {
        if let value = PropertyListValue(foundationObject: object) {
            return entrySize(key: key, value: value)
        }
        let encoded = try? PropertyListSerialization.data(
            fromPropertyList: [key: object], format: .binary, options: 0)
        return encoded?.count ?? 0
    }

    /// An object's own bytes plus its offset in the table and its parent's reference to it
    /// (4 bytes each at most in a file under 4 GiB).
    private static let perObject = 8

    /// The bytes a count takes after a marker: nothing below 15, else an integer object.
    private static func countSize(_ count: Int) -> Int {
        count < 15 ? 0 : 1 + integerWidth(UInt64(count))
    }

    /// The width of a non-negative integer in a binary plist: 1, 2, 4 or 8 bytes.
    private static func integerWidth(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    private static func objectSize(string: String) -> Int {
        // ASCII is kept one byte a character; anything else as UTF-16.
        let isASCII = string.utf8.allSatisfy { $0 < 0x80 }
        let units = isASCII ? string.utf8.count : string.utf16.count
        return perObject + 1 + countSize(units) + (isASCII ? units : units * 2)
    }

    private static func objectSize(_ value: PropertyListValue) -> Int {
        switch value {
        case .bool: return perObject + 1
        case .integer(let integer):
            return perObject + 1 + (integer < 0 ? 8 : integerWidth(UInt64(integer)))
        case .unsignedInteger(let integer): return perObject + 1 + (integer > UInt64(Int64.max) ? 16 : 8)
        case .double, .date: return perObject + 1 + 8
        case .string(let string): return objectSize(string: string)
        case .data(let data): return (perObject + 1 + countSize(data.count)).addingSaturated(data.count)
        // Saturated sums: copies of one large value in an array take its memory once, and a
        // 32-bit Int (every Apple Watch) would overflow counting their encoding.
        case .array(let elements):
            return elements.reduce(perObject + 1 + countSize(elements.count)) {
                $0.addingSaturated(objectSize($1))
            }
        case .dictionary(let entries):
            return entries.reduce(perObject + 1 + countSize(entries.count)) {
                $0.addingSaturated(objectSize(string: $1.key)).addingSaturated(objectSize($1.value))
            }
        }
    }
}

extension StoreError {
    /// A ``UserDefaultsStore``'s refusal of writes that would take its domain to `total` bytes,
    /// past `limit`; `largest` is the written key that grows the most, of `size` bytes.
    static func domainTooLarge(
        suite: String?, keys: [String], largest: String, size: Int, total: Int, limit: Int
    ) -> StoreError {
        let others = keys.count > 1 ? " (with \(keys.count - 1) other key(s) in the same write)" : ""
        return StoreError(
            kind: .tooLarge, store: "UserDefaults(suite: \(suite ?? "custom"))",
            message:
                "writing \(String(reflecting: largest)) (\(size) bytes)\(others) would take the domain to "
                + "about \(total) bytes, past its limit of \(limit) bytes (UserDefaults drops writes past "
                + "it); nothing was written",
            keys: keys)
    }
}
