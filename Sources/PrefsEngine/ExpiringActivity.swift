import Dispatch
import Foundation
import PrefsModel
import PrefsSupport

/// Background work the system may cut short, or refuse.
///
/// On iOS and its siblings a checkpoint runs inside `ProcessInfo.performExpiringActivity` (which
/// app extensions may use too), so the app is not suspended in the middle of it. The system
/// calls the block once with `expired == false` to do the work and, when it needs the time
/// back, again on another thread with `expired == true`; when it refuses the assertion outright
/// it calls the block *only* with `true`. This type turns those calls into three outcomes, the
/// same on every platform (Linux runs them in CI through ``SQLiteStoreFaults/expiringActivity``):
///
/// - granted: the work runs, and sees ``Expiry/isExpired`` if the system asks for the time back;
/// - expired while running: the expiry call returns only once the work has returned, so the
///   rollback is done and every lock let go before the app is suspended (`0xdead10cc`);
/// - refused: the work never runs, and `refused` is called instead (the caller retries later).
///
/// Elsewhere the work runs on a utility queue and is never refused or expired.
///
/// Work that mostly waits on something else (a sync waits on the network, and holds a file
/// lock only while it writes the local store) runs ``runInSteps(_:system:_:refused:)``: the
/// expiry call waits only for the step in progress (``Expiry/step(_:)``), and no step starts
/// after it; the rest of the work goes on, holding no lock, until its next step fails.
///
/// ```swift
/// let core = store.core
/// ExpiringActivity.run("moving the journal into SQLite") { expiry in
///     try? core.checkpointer.checkpoint(expiry: expiry)
/// } refused: {
///     // asked for again in a second
/// }
/// ```
package enum ExpiringActivity {
    /// How the system answers a request for background time: it calls `respond` with `false` to
    /// run the work and with `true` to refuse it or take the time back (as
    /// `performExpiringActivity` calls its block).
    package typealias System =
        @Sendable (_ reason: String, _ respond: @escaping @Sendable (Bool) -> Void) -> Void

    /// Whether the system asked the work to stop, and when the work is over.
    package final class Expiry: Sendable {
        private enum Phase { case waiting, running, finished, refused }
        private let phase = Locked(Phase.waiting)
        private let expired = AtomicWord()
        private let over = DispatchSemaphore(value: 0)
        /// Whether the expiry call waits for the whole work (or only for a step in progress).
        private let waitsForTheWholeWork: Bool
        /// Held through each ``step(_:)``; the expiry call takes it once to wait for one.
        private let steps = Locked(())

        init(waitsForTheWholeWork: Bool = true) {
            self.waitsForTheWholeWork = waitsForTheWholeWork
        }

        /// True once the system (or a test) asked the work to stop.
        package var isExpired: Bool { expired.load() != 0 }

        /// Asks the work to stop (it checks ``isExpired`` between its steps).
        func expire() { expired.store(1) }

        /// Runs `body` unless the time was taken back: the expiry call waits for a step in
        /// progress, and none starts after it (`nil` then, `body` not run).
        ///
        /// ```swift
        /// ExpiringActivity.runInSteps("writing") { expiry in
        ///     let written = expiry.step { 1 + 1 }  // nil once the time was taken back
        ///     print(written ?? 0)
        /// } refused: {}
        /// ```
        package func step<Result>(_ body: () throws -> Result) rethrows -> Result? {
            try steps.withLock { _ in isExpired ? nil : try body() }
        }

        /// The work may start: false when the system refused (or expired) it first.
        fileprivate func begin() -> Bool {
            phase.withLock { phase in
                guard phase == .waiting else { return false }
                phase = .running
                return true
            }
        }

        fileprivate func finish() {
            phase.withLock { $0 = .finished }
            over.signal()
        }

        /// Expires the work and waits until it has returned; true when it had never started (a
        /// refusal), in which case it never will.
        fileprivate func expireAndWait() -> Bool {
            expire()
            let before = phase.withLock { phase in
                defer { if phase == .waiting { phase = .refused } }
                return phase
            }
            switch before {
            case .waiting: return true
            case .running:
                guard waitsForTheWholeWork else {
                    steps.withLock { _ in }  // the step in progress, if any, is over
                    return false
                }
                over.wait()
                over.signal()  // a second expiry call (there should be none) does not hang
                return false
            case .finished, .refused: return false
            }
        }
    }

    /// Runs `body` in the background, inside an expiring-activity assertion where there is one;
    /// calls `refused` instead when the system will not give the time.
    static func run(
        _ reason: String, system: System? = nil, _ body: @escaping @Sendable (Expiry) -> Void,
        refused: @escaping @Sendable () -> Void
    ) {
        run(reason, system: system, expiry: Expiry(), body, refused: refused)
    }

    /// Runs `body` as ``run(_:system:_:refused:)`` does, except that the expiry call waits only
    /// for the step in progress (see ``Expiry/step(_:)``), not for `body` to return.
    ///
    /// ```swift
    /// ExpiringActivity.runInSteps("syncing") { expiry in
    ///     let answer = [1, 2, 3].reduce(0, +)  // the network, holding no lock: may be suspended here
    ///     _ = expiry.step { print(answer) }  // the local write: never started after the expiry
    /// } refused: {
    ///     // asked for again later
    /// }
    /// ```
    package static func runInSteps(
        _ reason: String, system: System? = nil, _ body: @escaping @Sendable (Expiry) -> Void,
        refused: @escaping @Sendable () -> Void
    ) {
        run(reason, system: system, expiry: Expiry(waitsForTheWholeWork: false), body, refused: refused)
    }

    private static func run(
        _ reason: String, system: System?, expiry: Expiry, _ body: @escaping @Sendable (Expiry) -> Void,
        refused: @escaping @Sendable () -> Void
    ) {
        let respond: @Sendable (Bool) -> Void = { expired in
            if expired {
                if expiry.expireAndWait() { refused() }
            } else if expiry.begin() {
                body(expiry)
                expiry.finish()
            }
        }
        (system ?? platformSystem)(reason, respond)
    }

    /// Runs `body` as ``run(_:system:_:refused:)`` does, and waits for it to be over.
    ///
    /// Over means run, refused, or taken back before it began (`body` is then not called). Where the platform
    /// has no expiring activities and no test stands in for them, `body` runs on the calling
    /// thread: waiting for a queue's thread there could wait for itself.
    ///
    /// ```swift
    /// ExpiringActivity.runAndWait("closing the store") { expiry in
    ///     if !expiry.isExpired { print("moving the journal") }
    /// }
    /// ```
    package static func runAndWait(
        _ reason: String, system: System? = nil, _ body: @escaping @Sendable (Expiry) -> Void
    ) {
        #if !(canImport(Darwin) && !os(macOS))
            if system == nil { return body(Expiry()) }
        #endif
        let over = DispatchSemaphore(value: 0)
        run(reason, system: system) { expiry in
            body(expiry)
            over.signal()
        } refused: {
            over.signal()
        }
        over.wait()
    }

    /// Runs `body` as ``runAndWait(_:system:_:)`` does and hands back what it returned or threw;
    /// `nil` when it never ran (refused, or taken back before it began).
    ///
    /// ```swift
    /// let outcome = ExpiringActivity.runAndWaitForResult("copying values") { expiry in 42 }
    /// ```
    package static func runAndWaitForResult<Value: Sendable>(
        _ reason: String, system: System? = nil, _ body: @escaping @Sendable (Expiry) throws -> Value
    ) -> Result<Value, any Error>? {
        let outcome = Locked<Result<Value, any Error>?>(nil)
        runAndWait(reason, system: system) { expiry in
            let result = Result { try body(expiry) }
            outcome.withLock { $0 = result }
        }
        return outcome.withLock { $0 }
    }

    /// The platform's answer: Apple's expiring activities on iOS and its siblings; elsewhere the
    /// work always runs, on a utility queue.
    private static let platformSystem: System = { reason, respond in
        #if canImport(Darwin) && !os(macOS)
            ProcessInfo.processInfo.performExpiringActivity(withReason: reason, using: respond)
        #else
            DispatchQueue.global(qos: .utility).async { respond(false) }
        #endif
    }
}

extension Journal {
    /// The journal's lock, waited for in short steps when the system may ask for the time back
    /// (`expiry`): the wait ends, throwing `.expired`, as soon as it does, instead of at `timeout`.
    ///
    /// <!-- swift: not compiled (a store's own journal, inside the engine) -->
    /// ```swift
    /// try journal.withLock(timeout: .seconds(10), expiry: expiry) { locked in journal.sequence }
    /// ```
    func withLock<Result>(
        timeout: Duration, expiry: ExpiringActivity.Expiry?, _ body: (LockHeld) throws -> Result
    ) throws -> Result {
        guard let expiry else { return try withLock(timeout: timeout, body) }
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                return try withLock(timeout: min(timeout, .milliseconds(50)), body)
            } catch let error as JournalError where error.kind == .busy {
                if expiry.isExpired {
                    throw StoreError(
                        path: path, kind: .expired, detail: "while waiting for the journal's lock")
                }
                if ContinuousClock.now >= deadline { throw error }
            }
        }
    }
}
