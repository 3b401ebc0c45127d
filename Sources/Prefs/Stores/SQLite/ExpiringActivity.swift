import Dispatch
import Foundation
import Synchronization

/// Background work the system may cut short.
///
/// On iOS and its siblings a checkpoint runs inside
/// `ProcessInfo.performExpiringActivity` (which app extensions may use too), so the app is not
/// suspended in the middle of it, and when the system needs to suspend it anyway the work sees
/// ``Expiry/isExpired`` and stops cleanly. Elsewhere the work simply runs on a utility queue and
/// never expires; tests expire it at a named step through ``SQLiteStoreFaults``.
///
/// ```swift
/// let core = store.core
/// ExpiringActivity.run("moving the journal into SQLite") { expiry in try? core.checkpointer.checkpoint(expiry: expiry) }
/// ```
enum ExpiringActivity {
    /// Whether the system asked the work to stop.
    final class Expiry: Sendable {
        private let expired = Atomic<Bool>(false)

        /// True once the system (or a test) asked the work to stop.
        var isExpired: Bool { expired.load(ordering: .acquiring) }

        func expire() { expired.store(true, ordering: .releasing) }
    }

    /// Runs `body` in the background, inside an expiring-activity assertion where there is one.
    static func run(_ reason: String, _ body: @escaping @Sendable (Expiry) -> Void) {
        let expiry = Expiry()
        #if canImport(Darwin) && !os(macOS)
            // Called twice when the system needs the time back: first to do the work, then (on
            // another thread, while the work may still run) with `expired` set.
            ProcessInfo.processInfo.performExpiringActivity(withReason: reason) { expired in
                if expired { expiry.expire() } else { body(expiry) }
            }
        #else
            DispatchQueue.global(qos: .utility).async { body(expiry) }
        #endif
    }
}
