import PrefsSupport
import Testing

/// A `Duration` in whole milliseconds (the lock timeout's and the watch's unit) never traps,
/// however absurd the duration an app gives.
@Suite struct DurationUnitsTests {
    @Test func wholeMillisecondsAreClampedNeverATrap() {
        #expect(Duration.milliseconds(1_500).wholeMilliseconds == 1_500)
        #expect(Duration.seconds(-5).wholeMilliseconds == 0)
        #expect(Duration.seconds(Int64.max).wholeMilliseconds == .max)
        // Seconds whose milliseconds fit an Int64 only without the fraction: adding it trapped.
        let edge = Duration(
            secondsComponent: Int64.max / 1_000, attosecondsComponent: 999_000_000_000_000_000)
        #expect(edge.wholeMilliseconds == .max)
    }
}
