import Foundation

extension PropertyListValue {
    /// Converts a Foundation property-list object (as `UserDefaults` or `PropertyListSerialization`
    /// return them) into a value; `nil` when the object is not a property-list type.
    ///
    /// ```swift
    /// PropertyListValue(foundationObject: ["a": 1] as [String: Any])  // .dictionary(["a": .integer(1)])
    /// ```
    public init?(foundationObject object: Any) {
        // Native Swift values first: an `NSNumber` holding 1 also casts to `Bool`, a native `Int` does not.
        // Ordered by how often each type is stored and how cheap its cast is: reads of plain
        // `UserDefaults` values go through here. swift-corelibs-foundation answers native
        // values, told apart by their type alone; a cast to `String` or `NSNumber` would bridge
        // (a failed cast of an `Int` to `String` cost as much as the rest of a read).
        let found = type(of: object)
        if found == Int.self, let value = object as? Int {
            self = .integer(Int64(value))
            return
        }
        if found == Double.self, let value = object as? Double {
            self = .double(value)
            return
        }
        if found == Bool.self, let value = object as? Bool {
            self = .bool(value)
            return
        }
        switch object {
        case let value as String: self = .string(value)
        case is NSNumber:
            guard let number = PropertyListValue(number: object) else { return nil }
            self = number
        case let value as Date: self = .date(value)
        case let value as Data: self = .data(value)
        case let value as [Any]:
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(value.count)
            for element in value {
                guard let converted = PropertyListValue(foundationObject: element) else { return nil }
                elements.append(converted)
            }
            self = .array(elements)
        case let value as [String: Any]:
            var entries: [String: PropertyListValue] = [:]
            entries.reserveCapacity(value.count)
            for (key, element) in value {
                guard let converted = PropertyListValue(foundationObject: element) else { return nil }
                entries[key] = converted
            }
            self = .dictionary(entries)
        default:
            guard let number = PropertyListValue(number: object) else { return nil }
            self = number
        }
    }

    private init?(number object: Any) {
        if type(of: object) == Bool.self, let value = object as? Bool {
            self = .bool(value)
            return
        }
        guard let number = object as? NSNumber else { return nil }
        switch NumberKind(number) {
        case .boolean: self = .bool(number.boolValue)
        case .real: self = .double(number.doubleValue)
        case .unsigned: self = .integer(unsigned: number.uint64Value)
        case .signed: self = .integer(number.int64Value)
        }
    }

    /// What an `NSNumber` holds, as a property list sees it (read once: `objCType` is a call
    /// into CoreFoundation).
    @usableFromInline
    package enum NumberKind {
        case boolean, real, unsigned, signed

        @usableFromInline
        init(_ number: NSNumber) {
            let code = UInt8(bitPattern: number.objCType.pointee)
            #if canImport(Darwin)
                let isBoolean = CFGetTypeID(number) == CFBooleanGetTypeID()
            #else
                // swift-corelibs-foundation reports booleans with the `char` type code.
                let isBoolean = code == UInt8(ascii: "c") || code == UInt8(ascii: "B")
            #endif
            self =
                if isBoolean {
                    .boolean
                } else {
                    switch code {
                    case UInt8(ascii: "f"), UInt8(ascii: "d"): .real
                    case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"): .unsigned
                    default: .signed
                    }
                }
        }
    }

    /// The value as a Foundation property-list object, ready for `UserDefaults` or
    /// `PropertyListSerialization`.
    ///
    /// ```swift
    /// UserDefaults.standard.set(PropertyListValue.integer(3).foundationObject, forKey: "count")
    /// ```
    public var foundationObject: Any {
        switch self {
        case .bool(let value): value
        // `Int` where it fits (every 64-bit platform), so plain readers get the type they expect.
        case .integer(let value): Int(exactly: value).map { $0 as Any } ?? value
        case .unsignedInteger(let value): UInt(exactly: value).map { $0 as Any } ?? value
        case .double(let value): value
        case .string(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let value): value.map(\.foundationObject)
        case .dictionary(let value): value.mapValues(\.foundationObject)
        }
    }
}

extension PropertyListValue {
    /// The integer `value`: ``integer(_:)`` when it fits `Int64`, else ``unsignedInteger(_:)``.
    ///
    /// ```swift
    /// PropertyListValue.integer(unsigned: UInt64.max)  // .unsignedInteger(18446744073709551615)
    /// ```
    package static func integer(unsigned value: UInt64) -> PropertyListValue {
        Int64(exactly: value).map { .integer($0) } ?? .unsignedInteger(value)
    }
}
