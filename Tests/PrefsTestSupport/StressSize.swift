import Foundation

/// How many rounds a stress or fault-injection test runs: `local` in a developer's `swift test`,
/// `ci` where `CI=true` (CI runs the long form every time), so `swift test` stays within 90
/// seconds on two cores without a suite running less where it counts.
///
/// ```swift
/// for round in 0..<stressRounds(local: 10, ci: 30) { … }
/// ```
public func stressRounds(local: Int, ci: Int) -> Int {
    ProcessInfo.processInfo.environment["CI"] == "true" ? ci : local
}
