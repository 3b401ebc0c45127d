import Foundation

/// The values a key accepts: the check a write and a read make, and the same set as tools see it.
@usableFromInline
struct KeyAllowed<Value: PreferenceValue>: Sendable {
    @usableFromInline let accepts: @Sendable (Value) -> Bool
    let published: Preferences.AllowedValues

    /// Why `value` is refused.
    @usableFromInline
    func refusal(of value: Value) -> PreferenceError {
        .notAllowed(value: "\(value)", allowed: published.description)
    }

    static func range(_ range: ClosedRange<Value>) -> KeyAllowed? where Value: Comparable {
        guard let lower = try? Value.serialize(range.lowerBound),
            let upper = try? Value.serialize(range.upperBound)
        else { return nil }
        return KeyAllowed(accepts: { range.contains($0) }, published: .range(lower, upper))
    }

    /// The listed values; for an optional key `nil` too (it removes the value, always allowed).
    static func list(_ values: [Value]) -> KeyAllowed where Value: Equatable {
        KeyAllowed(
            accepts: { value in
                guard !values.contains(value) else { return true }
                do { return try Value.serialize(value) == nil } catch { return false }
            },
            published: .values(values.compactMap { try? Value.serialize($0) }))
    }
}

extension Preferences {
    /// The values a key accepts.
    ///
    /// A write of another throws, and a stored value outside reads as the default (reported to
    /// the diagnostics). Tools see the same set (`prefs describe`).
    ///
    /// A range needs a `Comparable` value, a list an `Equatable` one; an optional key's range is
    /// of its wrapped type, and `nil` (no value) is always accepted.
    ///
    /// ```swift
    /// let volume = Preferences.Key<Double>("volume", default: 0.5, allowed: .range(0...1))
    /// let quality = Preferences.Key<Int>("quality", default: 720, allowed: [480, 720, 1080])
    /// let retries = Preferences.Key<Int?>("retries", allowed: .range(1...5))
    /// ```
    public struct Allowed<Value: PreferenceValue>: Sendable {
        let check: KeyAllowed<Value>?
    }
}

extension Preferences.Allowed where Value: Comparable {
    /// The values of a range: `allowed: .range(0...1)`.
    ///
    /// ```swift
    /// let volume = Preferences.Key<Double>("volume", default: 0.5, allowed: .range(0...1))
    /// ```
    public static func range(_ range: ClosedRange<Value>) -> Self {
        Self(check: .range(range))
    }
}

extension Preferences.Allowed {
    /// An optional key's range: its wrapped values in `range`, and `nil`.
    ///
    /// ```swift
    /// let retries = Preferences.Key<Int?>("retries", allowed: .range(1...5))
    /// ```
    public static func range<Wrapped: Comparable & PreferenceValue>(_ range: ClosedRange<Wrapped>) -> Self
    where Value == Wrapped? {
        Self(check: KeyAllowed<Wrapped>.range(range).map { $0.optional() })
    }
}

extension Preferences.Allowed: ExpressibleByArrayLiteral where Value: Equatable {
    /// The listed values: `allowed: [480, 720, 1080]` (an optional key accepts `nil` too).
    ///
    /// ```swift
    /// let quality = Preferences.Key<Int>("quality", default: 720, allowed: [480, 720, 1080])
    /// ```
    public init(arrayLiteral values: Value...) {
        check = .list(values)
    }

    /// The values of a list made elsewhere.
    ///
    /// ```swift
    /// let sizes = [480, 720, 1080]
    /// let quality = Preferences.Key<Int>("quality", default: 720, allowed: .values(sizes))
    /// ```
    public static func values(_ values: [Value]) -> Self {
        Self(check: .list(values))
    }
}

extension KeyAllowed {
    /// The same check for an optional key of this type: `nil` passes, a value as here.
    func optional() -> KeyAllowed<Value?> {
        let accepts = self.accepts
        return KeyAllowed<Value?>(accepts: { $0.map(accepts) ?? true }, published: published)
    }
}

extension Preferences.Key {
    /// The description ``keyDescription`` gives: the stored type from the value type (or from the
    /// default's stored form), the cases of an enum as its allowed values.
    func describe() -> Preferences.KeyDescription {
        let stored = encodedDefault
        var type = storedTypeFlag(of: Value.self)
        var fields: [String: String] = [:]
        if type.isEmpty, let stored {
            type = stored.typeFlag
            // A value the type does not tell (a `Codable` struct): its fields' types, as its
            // default has them, so a tool writes each field as the program reads it.
            if case .dictionary(let entries) = stored { fields = entries.mapValues(\.typeFlag) }
        }
        var description = Preferences.KeyDescription(
            name: name, type: type, swiftType: swiftSpelling(of: Value.self), defaultValue: stored,
            help: help,
            allowed: allowed?.published ?? Self.cases())
        description.elementTypes = storedElementTypes(of: Value.self)
        description.fieldTypes = fields
        description.isSecret = isSecret
        return description
    }

    /// Every case of a `CaseIterable` value type, stored: an enum key's allowed values.
    private static func cases() -> Preferences.AllowedValues? {
        guard let iterable = Value.self as? any CaseIterable.Type else { return nil }
        let values = storedCases(of: iterable)
        return values.isEmpty ? nil : .values(values)
    }

    private static func storedCases<Cases: CaseIterable>(of _: Cases.Type) -> [PropertyListValue] {
        Cases.allCases.compactMap { ($0 as? Value).flatMap { try? Value.serialize($0) } }
    }
}

extension PropertyListValue {
    /// The value's type as `prefs write` spells it (`-int`, `-string` …).
    ///
    /// ```swift
    /// PropertyListValue.double(0.5).typeFlag  // "-float"
    /// ```
    ///
    /// (Package access: the `prefs` tool checks a written value against a declaration with it.)
    package var typeFlag: String {
        switch self {
        case .bool: "-bool"
        case .integer, .unsignedInteger: "-int"
        case .double: "-float"
        case .string: "-string"
        case .date: "-date"
        case .data: "-data"
        case .array: "-array"
        case .dictionary: "-dict"
        }
    }
}
