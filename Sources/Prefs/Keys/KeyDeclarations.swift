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

    static func list(_ values: [Value]) -> KeyAllowed where Value: Equatable {
        KeyAllowed(
            accepts: { values.contains($0) },
            published: .values(values.compactMap { try? Value.serialize($0) }))
    }
}

extension Preferences.Key {
    /// Creates a key that accepts only values in `allowed`: a write of another throws, and a
    /// stored value outside reads as the default (reported to the diagnostics).
    ///
    /// ```swift
    /// let volume = Preferences.Key<Double>("volume", default: 0.5, help: "Playback volume", allowed: 0...1)
    /// ```
    public convenience init(
        _ name: String, default defaultValue: Value, help: String? = nil, allowed: ClosedRange<Value>
    ) where Value: Comparable {
        self.init(name, default: defaultValue, coding: nil, help: help, allowed: .range(allowed))
    }

    /// Creates a key that accepts only the listed values (see ``init(_:default:help:allowed:)-(_,_,_,ClosedRange<Value>)``).
    ///
    /// ```swift
    /// let quality = Preferences.Key<Int>("quality", default: 720, help: "Video lines", allowed: [480, 720, 1080])
    /// ```
    public convenience init(
        _ name: String, default defaultValue: Value, help: String? = nil, allowed: [Value]
    )
    where Value: Equatable {
        self.init(name, default: defaultValue, coding: nil, help: help, allowed: .list(allowed))
    }

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
            name: name, type: type, swiftType: String(describing: Value.self), defaultValue: stored,
            help: help,
            allowed: allowed?.published ?? Self.cases())
        description.elementTypes = storedElementTypes(of: Value.self)
        description.fieldTypes = fields
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
