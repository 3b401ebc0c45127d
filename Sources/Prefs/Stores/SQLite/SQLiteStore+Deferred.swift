import Dispatch
import Foundation

/// The deferred durability mode: writes acknowledged from memory, committed in batches.
extension SQLiteStore {
    /// Commits every deferred write now; throws when the commit fails (the writes stay queued and are tried again).
    ///
    /// Does nothing in the other modes, where every write is already committed.
    ///
    /// ```swift
    /// try store.flush()  // before exiting, in deferred mode
    /// ```
    public func flush() throws {
        try database.withLock { database in
            guard pending.withLock({ !$0.writes.isEmpty }) else { return }
            // An empty write of its own: `write` commits the queued writes with it.
            try write(&database) { _ in }
        }
    }

    /// Queues writes: visible at once in the cache and to observers, committed within `maxDelay`.
    func enqueueDeferred(_ writes: [String: PropertyListValue?], maxDelay: Duration) {
        let needsSchedule = pending.withLock { pending in
            for (key, value) in writes { pending.writes[key] = .some(value) }
            values.withLock { values in
                for (key, value) in writes { values[key] = value }
            }
            // Published under the lock, so observers hear in the order writes were made.
            observers.publish(StoreChange(values: writes))
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if needsSchedule { scheduleFlush(after: maxDelay) }
    }

    /// Puts writes taken for a commit that failed back in the queue, unless newer ones came since.
    func restorePending(_ writes: [String: PropertyListValue?]) {
        guard !writes.isEmpty, case .deferred(let maxDelay) = options.durability else { return }
        let needsSchedule = pending.withLock { pending in
            for (key, value) in writes where pending.writes[key] == nil { pending.writes[key] = .some(value) }
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if needsSchedule { scheduleFlush(after: maxDelay) }
    }

    private func scheduleFlush(after delay: Duration) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay.timeInterval) { [weak self] in
            guard let self else { return }
            pending.withLock { $0.flushScheduled = false }
            do {
                try flush()
            } catch {
                // Nobody is waiting for this write to throw: say so once per failure, and retry.
                FileHandle.standardError.write(
                    Data("prefs: deferred commit failed, will retry: \(error)\n".utf8))
            }
        }
    }
}
