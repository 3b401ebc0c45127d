import Foundation

/// A property-list value: the one representation every store reads and writes.
///
/// Typed values are turned into a `PropertyListValue` by their ``PreferenceValue`` conformance
/// before they reach a store, and back again when read. Stores, the `prefs` tool and the
/// diagnostics all speak this one model.
///
/// ```swift
/// let value: PropertyListValue = .dictionary(["volume": .double(0.5), "muted": .bool(false)])
/// try store.setValue(value, forKey: "audio")
/// ```
public enum PropertyListValue: Sendable, Hashable {
    /// A Boolean (`<true/>` or `<false/>`).
    case bool(Bool)
    /// A signed 64-bit integer (`<integer>`).
    case integer(Int64)
    /// An integer above `Int64.max`, up to `UInt64.max` (`<integer>` too: property lists hold
    /// unsigned 64-bit integers). Smaller integers are always ``integer(_:)``.
    case unsignedInteger(UInt64)
    /// A double-precision real number (`<real>`).
    case double(Double)
    /// A Unicode string (`<string>`).
    case string(String)
    /// A point in time (`<date>`).
    case date(Date)
    /// Raw bytes (`<data>`).
    case data(Data)
    /// An ordered list of values (`<array>`).
    case array([PropertyListValue])
    /// A string-keyed dictionary of values (`<dict>`).
    case dictionary([String: PropertyListValue])

    /// The property-list type name of this value, as `defaults read-type` prints it.
    ///
    /// ```swift
    /// PropertyListValue.integer(3).typeName  // "integer"
    /// ```
    package var typeName: String {
        switch self {
        case .bool: "boolean"
        case .integer, .unsignedInteger: "integer"
        case .double: "float"
        case .string: "string"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}

extension PropertyListValue: CustomStringConvertible {
    /// A short description for people: the type name, then the value as Swift would write it
    /// (a collection's first elements, a long string's start).
    ///
    /// ```swift
    /// PropertyListValue.string("hi").description  // "string \"hi\""
    /// PropertyListValue.array([.integer(1), .bool(true)]).description  // "array [1, true]"
    /// ```
    public var description: String {
        "\(typeName) \(literal)"
    }

    /// The value as Swift would write it, cut short past a few elements or characters.
    ///
    /// ```swift
    /// PropertyListValue.dictionary(["a": .integer(1)]).literal  // "[\"a\": 1]"
    /// ```
    package var literal: String {
        var budget = Self.literalBudget
        return literal(budget: &budget)
    }

    /// How many scalars a description shows before it says how many more there are.
    private static let literalBudget = 12

    private func literal(budget: inout Int) -> String {
        budget -= 1
        switch self {
        case .bool(let value): return "\(value)"
        case .integer(let value): return "\(value)"
        case .unsignedInteger(let value): return "\(value)"
        case .double(let value): return "\(value)"
        case .string(let value):
            return value.count > 60
                ? String(reflecting: String(value.prefix(60))) + "…" : String(reflecting: value)
        case .date(let value): return value.formatted(.iso8601)
        case .data(let value): return "<\(value.count) bytes>"
        case .array(let elements):
            return Self.listed(elements.count, budget: &budget, open: "[", close: "]", empty: "[]") {
                index, budget in
                elements[index].literal(budget: &budget)
            }
        case .dictionary(let entries):
            let sorted = entries.sorted { StoreKey($0.key) < StoreKey($1.key) }
            return Self.listed(sorted.count, budget: &budget, open: "[", close: "]", empty: "[:]") {
                index, budget in
                "\(String(reflecting: sorted[index].key)): \(sorted[index].value.literal(budget: &budget))"
            }
        }
    }

    /// `count` items as `[a, b, … and 3 more]`, while the budget lasts.
    private static func listed(
        _ count: Int, budget: inout Int, open: String, close: String, empty: String,
        _ item: (Int, inout Int) -> String
    ) -> String {
        guard count > 0 else { return empty }
        var items: [String] = []
        for index in 0..<count {
            guard budget > 0 else {
                items.append("… \(count - index) more")
                break
            }
            items.append(item(index, &budget))
        }
        return open + items.joined(separator: ", ") + close
    }
}

extension PropertyListValue {
    /// The deepest nesting of arrays and dictionaries a stored value may have: far more than any
    /// real preference, few enough that reading a value can never exhaust a thread's stack.
    ///
    /// Every write is checked against it (``checkNesting()``) and every reader accepts it, so a
    /// value one store or process accepts, every other one reads. (Foundation on Linux cannot read
    /// back a `UserDefaults` file nested 513 levels deep, the domain's dictionary included, and then
    /// loses the whole domain: the limit stays well below that.)
    ///
    /// ```swift
    /// PropertyListValue.maximumNestingDepth  // 256
    /// ```
    package static let maximumNestingDepth = 256

    /// Throws ``PreferenceError/Kind-swift.struct/nestedTooDeeply`` when arrays and dictionaries nest
    /// deeper than ``maximumNestingDepth``.
    ///
    /// ```swift
    /// try PropertyListValue.array([.integer(1)]).checkNesting()  // fine: one level
    /// ```
    package func checkNesting() throws {
        if exceedsNesting(allowed: Self.maximumNestingDepth) {
            throw PreferenceError.nestedTooDeeply(limit: Self.maximumNestingDepth)
        }
    }

    /// The largest stored encoding one value may take in Prefs' stores: 8 MiB.
    ///
    /// A preference is a setting, not a file: `UserDefaults` keeps a whole domain under 4 MiB
    /// (1 MB on tvOS), and a value of hundreds of megabytes held several copies in memory and in
    /// the journal and SQLite at once. A larger value is refused with ``StoreError/Kind/tooLarge``
    /// before anything is written.
    ///
    /// ```swift
    /// PropertyListValue.largestStoredSize  // 8_388_608
    /// ```
    package static let largestStoredSize = 8 << 20

    /// Throws when a store must not take this value for `key`: nested too deeply
    /// (``checkNesting()``), or larger than ``largestStoredSize`` (a ``StoreError`` of kind
    /// ``StoreError/Kind/tooLarge`` naming the key, its size and the limit).
    ///
    /// Returns the size of the stored encoding, which the check had to find.
    ///
    /// ```swift
    /// try PropertyListValue.string("dark").checkStorable(key: "theme", store: "MemoryStore")
    /// ```
    @discardableResult
    package func checkStorable(key: String, store: String) throws -> Int {
        try checkNesting()
        let size = storedEncodingCount
        guard size > Self.largestStoredSize else { return size }
        throw StoreError(
            kind: .tooLarge, store: store,
            message:
                "the value of \"\(key)\" takes \(size) bytes; a value may take at most \(Self.largestStoredSize) (8 MiB): keep large data in a file of its own",
            keys: [key])
    }

    /// ``checkStorable(key:store:)`` for every value a store is about to write, before it
    /// changes anything, so a write is refused whole.
    ///
    /// ```swift
    /// try PropertyListValue.checkStorable(t.writes, store: "MemoryStore")
    /// ```
    package static func checkStorable(_ writes: [StoreKey: ValueChange], store: String) throws {
        for (key, change) in writes {
            if case .set(let value) = change { try value.checkStorable(key: key.name, store: store) }
        }
    }

    /// Checks every value a store is about to write (``checkNesting()`` for each): stores call it
    /// before changing anything, so a write is refused whole.
    ///
    /// ```swift
    /// try PropertyListValue.checkNesting(of: t.writes)
    /// ```
    package static func checkNesting(of writes: [StoreKey: ValueChange]) throws {
        for case .set(let value) in writes.values { try value.checkNesting() }
    }

    /// Whether containers nest deeper than `allowed`; looks no deeper than that, so its own
    /// recursion is bounded however deep the value is.
    private func exceedsNesting(allowed: Int) -> Bool {
        switch self {
        case .array(let elements):
            guard allowed > 0 else { return true }
            return elements.contains { $0.exceedsNesting(allowed: allowed - 1) }
        case .dictionary(let entries):
            guard allowed > 0 else { return true }
            return entries.values.contains { $0.exceedsNesting(allowed: allowed - 1) }
        default:
            return false
        }
    }
}
