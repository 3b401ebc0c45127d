import Foundation
import PrefsEngine

extension Preferences {
    /// The stored value as the key's type, or its default: the subscript's read, whatever the
    /// store, as ``decode(_:for:)`` gives it but without its generic path where it can.
    ///
    /// The general path hands the stored value to the type's ``PreferenceValue/deserialize(_:)``
    /// through the key's coding: for a short string read from a `SQLiteStore`, as long again as
    /// the look-up. For a plain key of `String`, `Int`, `Double` or `Bool` this builds the value
    /// itself when the store holds that very kind (or nothing): from a `SQLiteStore`'s read slot,
    /// from its words (``TypedReadStore/lookUp(_:)``); from any other store, from its
    /// ``PropertyListValue``. Any other answer (another kind, a number that does not fit, a key
    /// with a stored form or reading rule of its own) is read, converted or reported by
    /// ``decode(_:for:)`` exactly as the general path does.
    ///
    /// Specialized for the key's type in the caller (`@inlinable`), where each type test below
    /// is decided when compiling.
    ///
    /// ```swift
    /// let prefs = Preferences(store: try SQLiteStore(path: path))
    /// let theme = prefs[.theme]  // the slot's two words, as the string they hold
    /// ```
    @inlinable
    func typedValue<Value>(of key: Key<Value>) -> Value {
        if hidesSyncRecords, key.namesSyncRecord { return key.defaultValue }
        // The stored property itself, never bound to a local: bound, the store was retained
        // for the call.
        switch typedReadStore?.lookUp(key.name) {
        case nil: return typedValue(store.value(forKey: key.name), for: key)
        case .cache(let value): return typedValue(value, for: key)
        case .slot(let answer):
            guard key.isPlain,
                Value.self == String.self || Value.self == Int.self || Value.self == Double.self
                    || Value.self == Bool.self
            else { return decode(answer.value, for: key) }
            // Each `unsafeBitCast` follows a check that `Value` is that very type.
            switch answer.kind {
            case .missing: return key.defaultValue
            case .string where Value.self == String.self, .smallString where Value.self == String.self:
                return unsafeBitCast(answer.text, to: Value.self)
            case .integer where Value.self == Int.self:
                if let number = Int(exactly: Int64(bitPattern: answer.bits)) {
                    return unsafeBitCast(number, to: Value.self)
                }
            case .double where Value.self == Double.self:
                return unsafeBitCast(Double(bitPattern: answer.bits), to: Value.self)
            case .bool where Value.self == Bool.self: return unsafeBitCast(answer.bits != 0, to: Value.self)
            default: break
            }
            return decode(answer.value, for: key)
        }
    }

    /// A stored value as the key's type, or its default, by the same rule as
    /// ``typedValue(of:)``.
    @inlinable
    func typedValue<Value>(_ stored: PropertyListValue?, for key: Key<Value>) -> Value {
        guard key.isPlain,
            Value.self == String.self || Value.self == Int.self || Value.self == Double.self
                || Value.self == Bool.self
        else { return decode(stored, for: key) }
        // Each `unsafeBitCast` follows a check that `Value` is that very type.
        switch stored {
        case nil: return key.defaultValue
        case .string(let text) where Value.self == String.self: return unsafeBitCast(text, to: Value.self)
        case .integer(let number) where Value.self == Int.self:
            if let number = Int(exactly: number) { return unsafeBitCast(number, to: Value.self) }
        case .double(let number) where Value.self == Double.self: return unsafeBitCast(number, to: Value.self)
        case .bool(let flag) where Value.self == Bool.self: return unsafeBitCast(flag, to: Value.self)
        default: break
        }
        return decode(stored, for: key)
    }
}
