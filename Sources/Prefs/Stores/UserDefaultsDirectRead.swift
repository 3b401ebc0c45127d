import Foundation

extension Preferences {
    /// A typed read of a standard type straight from `UserDefaults`' object, for a handle on a
    /// ``UserDefaultsStore``: the value, the default when nothing is stored, or `nil` when the
    /// general path must answer.
    ///
    /// A read through the store turns Foundation's object into a ``PropertyListValue`` and then
    /// into the key's type: a failed cast to `String` for a number, a second cast to `NSNumber`,
    /// two looks at its type code. Plain `UserDefaults` getters cast once. For a key of `String`,
    /// `Int`, `Double` or `Bool` in its own stored form, with a name that has one spelling, this
    /// casts once too, and answers only where the general path would give the same value;
    /// anything else (a number of another kind, a value of another type, a key with a reading
    /// rule) takes the general path, which converts or reports exactly as before.
    ///
    /// Specialized for the key's type in the caller (`@inlinable`: generic casts cost as much as
    /// the conversion it saves) but never inlined, so the subscript every store's reads go
    /// through stays small (a read from a `SQLiteStore` is a few nanoseconds).
    ///
    /// ```swift
    /// let prefs = Preferences(store: UserDefaultsStore.standard)
    /// let volume = prefs[.volume]  // one cast from UserDefaults.standard's object
    /// ```
    @inlinable @inline(never)
    func directValue<Value>(of key: Key<Value>, from store: UserDefaultsStore) -> Value? {
        guard key.isPlain, key.hasOneSpelling,
            Value.self == String.self || Value.self == Int.self || Value.self == Double.self
                || Value.self == Bool.self
        else { return nil }
        guard let object = store.defaults.object(forKey: key.name) else { return key.defaultValue }
        // Each `unsafeBitCast` follows a check that `Value` is that very type.
        if Value.self == String.self {
            guard let text = object as? String else { return nil }
            return unsafeBitCast(text, to: Value.self)
        }
        // swift-corelibs-foundation answers a number as a native `Int`, `Double` or `Bool`:
        // exactly the key's type is the value itself (the general path reads it the same way).
        let found = type(of: object)
        if Value.self == Int.self && found == Int.self || Value.self == Double.self && found == Double.self
            || Value.self == Bool.self && found == Bool.self
        {
            return object as? Value
        }
        // Apple's Foundation answers an `NSNumber`. A native `Bool` is a boolean whatever
        // `NSNumber` it bridges to (as the general path reads it).
        guard let number = object as? NSNumber, found != Bool.self || Value.self == Bool.self
        else {
            return nil
        }
        switch PropertyListValue.NumberKind(number) {
        case .boolean where Value.self == Bool.self: return unsafeBitCast(number.boolValue, to: Value.self)
        case .real where Value.self == Double.self: return unsafeBitCast(number.doubleValue, to: Value.self)
        case .signed where Value.self == Int.self:
            guard let value = Int(exactly: number.int64Value) else { return nil }
            return unsafeBitCast(value, to: Value.self)
        default: return nil
        }
    }
}
