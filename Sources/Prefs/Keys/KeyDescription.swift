import Foundation

extension Preferences {
    /// The values a key accepts, as a description keeps them: a closed range, or a list.
    ///
    /// ```swift
    /// let volume = Preferences.Key<Double>("volume", default: 0.5, help: "Playback volume", allowed: .range(0...1))
    /// volume.keyDescription.allowedValues  // .range(.double(0), .double(1))
    /// ```
    package enum AllowedValues: Sendable, Equatable, CustomStringConvertible {
        /// Every value from the first to the second, both included (numbers, strings, dates).
        case range(PropertyListValue, PropertyListValue)
        /// Exactly these values.
        case values([PropertyListValue])

        /// Whether a stored value is one of them (an integer and a real of the same number are
        /// the same value).
        ///
        /// ```swift
        /// Preferences.AllowedValues.range(.integer(0), .integer(10)).allows(.double(2))  // true
        /// ```
        package func allows(_ value: PropertyListValue) -> Bool {
            switch self {
            case .range(let lower, let upper):
                guard let low = Self.compare(lower, value), let high = Self.compare(value, upper) else {
                    return false
                }
                return low && high
            case .values(let values):
                return values.contains {
                    $0 == value || (Self.number($0) != nil && Self.number($0) == Self.number(value))
                }
            }
        }

        /// `0...1`, or `system, light, dark`.
        package var description: String {
            switch self {
            case .range(let lower, let upper): "\(Self.text(lower))...\(Self.text(upper))"
            case .values(let values): values.map(Self.text).joined(separator: ", ")
            }
        }

        /// `left <= right`, or `nil` when the two cannot be compared.
        private static func compare(_ left: PropertyListValue, _ right: PropertyListValue) -> Bool? {
            if let left = number(left), let right = number(right) { return left <= right }
            switch (left, right) {
            case (.string(let left), .string(let right)): return left <= right
            case (.date(let left), .date(let right)): return left <= right
            default: return nil
            }
        }

        private static func number(_ value: PropertyListValue) -> Double? {
            switch value {
            case .integer(let number): Double(number)
            case .unsignedInteger(let number): Double(number)
            case .double(let number): number
            default: nil
            }
        }

        /// A value as a person writes it: numbers and strings bare, anything else as plist text.
        static func text(_ value: PropertyListValue) -> String {
            switch value {
            case .integer(let number): String(number)
            case .unsignedInteger(let number): String(number)
            case .double(let number) where number.rounded() == number && abs(number) < 1e15:
                String(Int64(number))
            case .double(let number): String(number)
            case .string(let text): text
            case .bool(let flag): flag ? "true" : "false"
            default: "\(value)"
            }
        }
    }

    /// What a program declares about a key, as a store keeps it for tools (`prefs describe`):
    /// published with ``Preferences/publish(_:)``, kept beside the values, never among them.
    ///
    /// ```swift
    /// let description = Preferences.Keys.volume.keyDescription
    /// print(description.type, description.defaultValue ?? "none")  // -float .double(0.5)
    /// ```
    public struct KeyDescription: Sendable, Equatable {
        /// The key's name.
        public var name: String
        /// The stored type as `prefs write` spells it: `-bool`, `-int`, `-float`, `-string`,
        /// `-date`, `-data`, `-array` or `-dict`; empty when any value is accepted.
        public var type: String
        /// The Swift type's name, as the program declares it (`Double`, `Theme`, `[String]?`).
        public var swiftType: String
        /// The default in its stored form; `nil` for an optional key's `nil`.
        public var defaultValue: PropertyListValue?
        /// One line saying what the key is for.
        public var help: String?
        /// The values the key accepts, when not every value of its type, as a person writes
        /// them: `0...1`, or `system, light, dark`.
        public var allowed: String? { allowedValues?.description }
        /// The same as values, for tools that check a value against them.
        package var allowedValues: AllowedValues?
        /// A collection's element types, outermost first, as ``type`` spells them: `["-int"]` for
        /// `[String: Int]`, `["-array", "-string"]` for `[[String]]`; empty when not known (the
        /// elements of a `Codable` type are not told from the type).
        package var elementTypes: [String] = []
        /// The type of each field of a value stored as a dictionary whose fields differ (a
        /// `Codable` struct), as its default has them: `["maxConnections": "-int"]`.
        package var fieldTypes: [String: String] = [:]
        /// Whether the key's value lives in the system's secret store
        /// (``Preferences/StoredForm/secret``): tools show whether it is set, not the value.
        package var isSecret = false
        /// For a secret key published by a handle: the service its secret is kept under.
        package var secretService: String?

        /// A description with these parts.
        ///
        /// ```swift
        /// Preferences.KeyDescription(name: "volume", type: "-float", swiftType: "Double", defaultValue: .double(0.5))
        /// ```
        package init(
            name: String, type: String, swiftType: String, defaultValue: PropertyListValue?,
            help: String? = nil, allowed: AllowedValues? = nil
        ) {
            self.name = name
            self.type = type
            self.swiftType = swiftType
            self.defaultValue = defaultValue
            self.help = help
            self.allowedValues = allowed
        }

        /// The description as a store keeps it: a dictionary (`type`, `swiftType`, `default`,
        /// `help`, `range` or `values`).
        ///
        /// ```swift
        /// let stored = Preferences.Keys.volume.keyDescription.storedForm
        /// ```
        package var storedForm: PropertyListValue {
            var entries: [String: PropertyListValue] = [
                "type": .string(type), "swiftType": .string(swiftType),
            ]
            entries["default"] = defaultValue
            entries["help"] = help.map(PropertyListValue.string)
            switch allowedValues {
            case .range(let lower, let upper)?: entries["range"] = .array([lower, upper])
            case .values(let values)?: entries["values"] = .array(values)
            case nil: break
            }
            if !elementTypes.isEmpty {
                entries["elements"] = .array(elementTypes.map(PropertyListValue.string))
            }
            if !fieldTypes.isEmpty {
                entries["fields"] = .dictionary(fieldTypes.mapValues(PropertyListValue.string))
            }
            if isSecret { entries["secret"] = .bool(true) }
            entries["secretService"] = secretService.map(PropertyListValue.string)
            return .dictionary(entries)
        }

        /// The description a store kept for `name`, or `nil` when `stored` is not one (a tool
        /// then treats the key as undeclared).
        ///
        /// ```swift
        /// let stored = Preferences.Keys.volume.keyDescription.storedForm
        /// let description = Preferences.KeyDescription(name: "volume", stored: stored)
        /// ```
        package init?(name: String, stored: PropertyListValue) {
            guard case .dictionary(let entries) = stored, case .string(let type)? = entries["type"],
                case .string(let swiftType)? = entries["swiftType"]
            else { return nil }
            var help: String?
            if let stored = entries["help"] {
                guard case .string(let text) = stored else { return nil }
                help = text
            }
            var allowed: AllowedValues?
            switch (entries["range"], entries["values"]) {
            case (.array(let bounds)?, nil) where bounds.count == 2: allowed = .range(bounds[0], bounds[1])
            case (nil, .array(let values)?): allowed = .values(values)
            case (nil, nil): allowed = nil
            default: return nil
            }
            self.init(
                name: name, type: type, swiftType: swiftType, defaultValue: entries["default"], help: help,
                allowed: allowed)
            // Written by releases that know element and field types; an earlier one's description
            // has neither, and its key is checked by its type alone.
            if case .array(let types)? = entries["elements"] {
                elementTypes = types.compactMap { if case .string(let type) = $0 { type } else { nil } }
            }
            if case .dictionary(let fields)? = entries["fields"] {
                fieldTypes = fields.compactMapValues { if case .string(let type) = $0 { type } else { nil } }
            }
            isSecret = entries["secret"] == .bool(true)
            if case .string(let service)? = entries["secretService"] { secretService = service }
        }
    }
}
