extension Int {
    /// The sum, or `Int.max` where it would overflow: for byte counts that are compared with a
    /// limit afterwards, which on a 32-bit `Int` (every Apple Watch) a value's encoded size can
    /// pass — copies of one large `Data` in an array share their memory, not their encoding.
    ///
    /// ```swift
    /// Int.max.addingSaturated(1)  // Int.max
    /// ```
    @inlinable
    package func addingSaturated(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
