import CPrefsShared
import Foundation
import PrefsSupport

/// The process's one queue of events on its stores' files (inotify, Linux): the kernel queues an
/// event while it unlinks, renames over or moves a watched file, before that call returns, so a
/// check that finds the queue empty knows nothing happened to any watched file since the queue
/// was last emptied — for the price of one `epoll_wait` that does not wait, less than the `fstat`
/// it saves (on the build machine about as cheap as a system call gets: 0.17 µs against 0.29 for
/// asking the queue itself with `FIONREAD`, 0.37–0.45 for `fstat`).
///
/// ```swift
/// let descriptor = open("/tmp/app.sqlite", O_RDONLY)
/// if let events = FileEvents.shared, let watch = events.watch(descriptor) {
///     let mark = events.discardWaiting()  // then look at the file itself
///     if events.isQuiet(since: mark) { /* nothing happened to it since */ }
///     events.unwatch(watch)
/// }
/// ```
///
/// One queue serves every store of the process (the number of inotify instances a user may have
/// is small, 128 by default): an event on any watched file sends every store's next check to the
/// file itself once. Emptying the queue of events counts as a change for every check made before
/// it, which ``isQuiet(since:)`` sees through `discards`: it is odd while the queue is being
/// read, then moves on by two when events were read, or goes back when none were (so stores
/// taking turns to write do not send each other to the file when nothing happened).
final class FileEvents: Sendable {
    /// The queue, or `nil` where there is none (not Linux, or inotify refused).
    static let shared: FileEvents? = FileEvents()

    private let queue: Int32
    /// An epoll instance that is ready while events wait in `queue`.
    private let poller: Int32
    private let discards = AtomicWord()
    /// How many checks use each watch: two stores of one file in a process share its watch
    /// (the kernel gives the same one for the same file), and only the last one removes it.
    private let users = Locked<[Int32: Int]>([:])

    /// A queue of its own (the library uses ``shared``); `nil` where there is none.
    init?() {
        queue = prefs_file_events_open()
        guard queue >= 0 else { return nil }
        poller = prefs_file_events_poller(queue)
        guard poller >= 0 else {
            SystemCall.close(queue)
            return nil
        }
    }

    deinit {
        SystemCall.close(poller)
        SystemCall.close(queue)
    }

    /// Watches the file `descriptor` is open on; `nil` when the kernel refuses (no `/proc`, or
    /// the user's watches are used up), and the caller looks at the file itself every time.
    func watch(_ descriptor: Int32) -> Int32? {
        let watch = prefs_file_events_watch(queue, descriptor)
        guard watch >= 0 else { return nil }
        users.withLock { $0[watch, default: 0] += 1 }
        return watch
    }

    /// Stops watching for one of the checks that asked for `watch`.
    func unwatch(_ watch: Int32) {
        users.withLock { users in
            let remaining = (users[watch] ?? 1) - 1
            users[watch] = remaining > 0 ? remaining : nil
            // Removing it queues an event of its own (`IN_IGNORED`): every store looks once.
            if remaining == 0 { _ = prefs_file_events_unwatch(queue, watch) }
        }
    }

    /// True when no event was queued since the discard that returned `mark`.
    ///
    /// The poller is asked first, the count of discards after: a discard that took an event
    /// away before the question was answered had begun before it (it changes `discards` before
    /// reading, and the kernel orders the read before the poller's look at the queue), so the
    /// count has moved.
    func isQuiet(since mark: UInt64) -> Bool {
        prefs_file_events_ready(poller) == 0 && discards.load() == mark
    }

    /// Discards every waiting event; returns the mark of a check that starts now, to be kept
    /// only once that check has found the file where it was.
    func discardWaiting() -> UInt64 {
        users.withLock { _ in
            // Odd while reading: a check that loads the count now is not quiet.
            discards.add(1)
            // Nothing read, nothing taken from any check: the count goes back to what the
            // earlier marks hold. A failure may have read some: it counts as read.
            if prefs_file_events_discard(queue) == 0 {
                return discards.subtract(1)
            }
            return discards.add(1)
        }
    }
}
