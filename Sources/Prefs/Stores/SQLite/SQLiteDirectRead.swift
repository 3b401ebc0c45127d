extension Preferences {
    /// A typed read from a ``SQLiteStore``, for a handle on one: the key's value, or `nil` for a
    /// handle on another store.
    ///
    /// The general path wraps a read slot's words in a ``PropertyListValue``, hands it through
    /// the store's protocol and unwraps it into the key's type: for a short string, a copy and a
    /// release of it at each step, about as long as the look at the slot. For a key of `String`,
    /// `Int`, `Double` or `Bool` in its own stored form, this builds the value from the slot's
    /// words when the slot holds that very kind (or no value); any other answer (another
    /// kind, a number that does not fit, a value only the cache holds) is read, converted or
    /// reported by ``decode(_:for:)`` exactly as the general path does.
    ///
    /// Specialized for the key's type in the caller (`@inlinable`), where each type test below
    /// is decided when compiling.
    ///
    /// ```swift
    /// let prefs = Preferences(store: try SQLiteStore(path: path))
    /// let theme = prefs[.theme]  // the slot's two words, as the string they hold
    /// ```
    @inlinable
    func sqliteValue<Value>(of key: Key<Value>) -> Value? {
        // The stored property itself, never bound to a local: bound, the store was retained
        // for the call.
        switch sqliteStore?.lookUp(key.name) {
        case nil: return nil
        case .cache(let value): return decode(value, for: key)
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
}
