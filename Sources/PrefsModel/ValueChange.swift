/// What a change or a transaction did to one key: set it to a value, or removed it.
///
/// ```swift
/// store.observe { change in
///     switch change.values["volume"] {
///     case .set(.double(let volume))?: print("volume is now", volume)
///     case .set(let other)?: print("volume holds", other)
///     case .removed?: print("volume was removed")
///     case nil: break  // this change did not touch it
///     }
/// }
/// ```
public enum ValueChange: Sendable, Equatable {
    /// The key now holds this value.
    case set(PropertyListValue)
    /// The key no longer holds a value.
    case removed

    /// `.set(value)`, or `.removed` for `nil`.
    ///
    /// ```swift
    /// ValueChange(nil)  // .removed
    /// ```
    package init(_ value: PropertyListValue?) {
        self = value.map(ValueChange.set) ?? .removed
    }

    /// The value the key now holds; `nil` when it was removed.
    ///
    /// ```swift
    /// ValueChange.set(.integer(1)).newValue  // .integer(1)
    /// ```
    public var newValue: PropertyListValue? {
        switch self {
        case .set(let value): value
        case .removed: nil
        }
    }
}

extension ValueChange: CustomStringConvertible {
    /// `set to integer 60`, or `removed`.
    ///
    /// ```swift
    /// print(ValueChange.set(.integer(60)))  // set to integer 60
    /// ```
    public var description: String {
        switch self {
        case .set(let value): "set to \(value)"
        case .removed: "removed"
        }
    }
}
