import Foundation

/// A `Duration` in the units the system calls take: seconds for Dispatch and `Thread.sleep`,
/// whole milliseconds for SQLite's busy timeout, `poll(2)` and the journal's lock, nanoseconds
/// for the benchmark. The one place `Duration`'s components are converted.
extension Duration {
    /// The duration in seconds.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).timeInterval  // 1.5
    /// ```
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (rounded down), never negative, at most `Int32.max`.
    ///
    /// ```swift
    /// Duration.seconds(10).wholeMilliseconds  // 10_000
    /// ```
    package var wholeMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? 0 : .max }
        // The fraction's milliseconds (under 1,000) added without trapping next to `Int64.max`.
        let (total, past) = milliseconds.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !past else { return seconds < 0 ? 0 : .max }
        return Int32(clamping: max(0, total))
    }

    /// The duration in nanoseconds, with fractions.
    ///
    /// ```swift
    /// Duration.microseconds(2).nanoseconds  // 2000.0
    /// ```
    package var nanoseconds: Double { timeInterval * 1e9 }
}
