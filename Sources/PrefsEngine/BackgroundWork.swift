import PrefsModel
import PrefsSupport

/// A store's work in the system's background time that is running now (a background
/// checkpoint, the watch's look at SQLite), so that letting the store go ends it at its next
/// step instead of waiting for all of it.
///
/// A store released on the main thread waited for such work whole: a background checkpoint
/// waiting for another process's SQLite lock, or the watch's look waiting for SQLite, held the
/// release for up to the lock timeout (seconds on the main thread). Ended, the work leaves its
/// records where they are (nothing is lost: the next store moves them).
///
/// ```swift
/// let work = BackgroundWork()
/// ExpiringActivity.runAndWait("a look") { expiry in
///     work.during(expiry) { print(expiry.isExpired ? "ended" : "looking") }
/// }
/// work.endAll()  // as the store closes
/// ```
final class BackgroundWork: Sendable {
    private let running = Locked<[ObjectIdentifier: ExpiringActivity.Expiry]>([:])
    private let ended = AtomicWord()

    /// Runs `body` as work `expiry` stands for, which ``endAll()`` ends; at once when the store
    /// is closing already.
    func during<Result>(_ expiry: ExpiringActivity.Expiry, _ body: () throws -> Result) rethrows -> Result {
        let id = ObjectIdentifier(expiry)
        running.withLock { $0[id] = expiry }
        defer { running.withLock { $0[id] = nil } }
        if ended.load() != 0 { expiry.expire() }
        return try body()
    }

    /// Ends the work running now at its next step, and any that starts later at once (without
    /// waiting for either).
    func endAll() {
        ended.store(1)
        for expiry in running.withLock({ Array($0.values) }) { expiry.expire() }
    }
}
