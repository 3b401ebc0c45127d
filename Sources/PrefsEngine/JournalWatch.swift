import CPrefsShared
import Dispatch
import Foundation
import PrefsSupport

/// Wakes a store when another store on the same file (in any process) writes, so that nobody
/// polls.
///
/// - **Linux.** One thread per store sleeps in a futex wait on the journal's change counter. A
///   writer increments the counter and then, only when the journal's "sleepers" word says a
///   watcher sleeps, clears it and wakes every waiter: a write costs no system call while nobody
///   waits. While the store has no observers its watcher waits only for the interval (or a
///   first observer), as Apple platforms' does.
/// - **Apple platforms.** A writer that finds a sleeper posts a notify(3) notification named
///   after the database file; each store's registration descriptor is watched by a dispatch
///   source.
/// - Either way, a timer at `refreshInterval` is a safety net (a read-only store cannot say it
///   sleeps, so it relies on it).
///
/// Invariants: a watcher says it sleeps (`sleepers = 1`) and *then* reads the counter, while a
/// writer increments the counter and *then* clears `sleepers` (all sequentially consistent): so
/// either the writer sees the sleeper and wakes it, or the watcher sees the new count and does
/// not sleep. A wake-up carries no data; it only makes the store read the journal. A watcher
/// whose look finds nothing new (the writes were its own process's) does not say it sleeps for
/// a millisecond, so a process writing in a loop does not wake its own watcher on every write.
package final class JournalWatch: @unchecked Sendable {
    /// How long a watcher stays quiet after finding only its own process's writes.
    private static let quietPause: Duration = .milliseconds(1)

    private let journal: Journal?
    private let stopped = Locked(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled by ``kick()`` and ``stop()``: what a Linux watcher of a store nobody observes
    /// waits for (or its interval).
    private let kicked = DispatchSemaphore(value: 0)
    private var sources: [any DispatchSourceProtocol] = []
    /// The queue the dispatch sources run on (`nil` for the Linux thread).
    private var queue: DispatchQueue?
    /// Marks this watcher's queue (one key per watcher: with one key for all, a `stop()` called
    /// from another store's watcher queue would take itself for this one's and skip its wait).
    private let onQueue = DispatchSpecificKey<Bool>()
    /// The longest a store goes without looking at the journal: `refreshInterval`, or a second
    /// for a read-only store, which cannot say it sleeps and so is never woken.
    let lookInterval: Duration

    /// The shortest and the longest look interval; `refreshInterval` is taken within them.
    package static let shortestInterval = Duration.milliseconds(1)
    package static let longestInterval = Duration.seconds(365 * 86_400)

    /// Starts watching; `look` reads the journal and returns whether it found anything new.
    ///
    /// The watcher asks writers to wake it only while `wantsWakeups` says so (the store has
    /// observers): a store nobody observes needs no wake-ups, since its reads look at the journal
    /// themselves, and its writers' neighbours then make no system call for it. Call ``kick()``
    /// when it starts wanting them.
    package init(
        journal: Journal?, interval: Duration, wantsWakeups: @escaping @Sendable () -> Bool,
        look: @escaping @Sendable () -> Bool
    ) {
        self.journal = journal
        // Between a millisecond and a year: Dispatch's timer traps on a negative interval or one
        // past about 584 years (its nanoseconds in a `UInt64`), and one under a millisecond would
        // keep a thread busy. A read-only store (or one with no journal at all) cannot say it
        // sleeps, so nobody wakes it: it looks at least once a second, on every platform.
        let interval = min(
            max(interval, Self.shortestInterval),
            journal?.isWritable != true ? .seconds(1) : Self.longestInterval)
        lookInterval = interval
        #if os(Linux)
            if let journal {
                let milliseconds = Int64(max(1, interval.wholeMilliseconds))
                let thread = Thread { [journal, stopped, finished, kicked] in
                    defer { finished.signal() }
                    Self.sleepAndLook(
                        journal: journal, milliseconds: milliseconds, stopped: stopped, kicked: kicked,
                        wantsWakeups: wantsWakeups,
                        look: look)
                }
                thread.name = "prefs.sqlite.watch"
                thread.start()
                return
            }
        #endif
        let queue = DispatchQueue(label: "prefs.sqlite.watch")
        self.queue = queue
        queue.setSpecific(key: onQueue, value: true)
        // No look after `stop()`: every handler and every scheduled look checks first.
        let look: @Sendable () -> Bool = { [stopped] in stopped.withLock { $0 } ? false : look() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
        timer.setEventHandler { _ = look() }
        timer.resume()
        sources.append(timer)
        #if canImport(Darwin)
            if let journal {
                var descriptor: Int32 = -1
                var token: Int32 = -1
                if prefs_notify_register(journal.notificationName, &descriptor, &token) == 0 {
                    let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
                    // The registration (and its descriptor) ends once the source can no longer
                    // read it: in the cancel handler, not while an event may still be handled.
                    source.setCancelHandler { _ = prefs_notify_cancel(token) }
                    let notified = NotifiedLooks(
                        journal: journal, queue: queue, stopped: stopped, wantsWakeups: wantsWakeups,
                        look: look)
                    source.setEventHandler {
                        var posted: Int32 = 0
                        _ = SystemCall.read(descriptor, &posted, MemoryLayout<Int32>.size)
                        notified.lookAndSleep()
                    }
                    source.resume()
                    sources.append(source)
                    queue.async { notified.lookAndSleep() }
                    finished.signal()
                    return
                }
            }
        #endif
        // Writes made before the watch started are found by one look now.
        queue.async { _ = look() }
        finished.signal()
    }

    #if os(Linux)
        private static func sleepAndLook(
            journal: Journal, milliseconds: Int64, stopped: Locked<Bool>, kicked: DispatchSemaphore,
            wantsWakeups: @Sendable () -> Bool, look: @Sendable () -> Bool
        ) {
            // The counter first, then a look: a write before the read is found by the look, any
            // later one moves the counter past `seen`.
            var seen = prefs_atomic_load(journal.counter)
            var foundNew = look()
            // Whether the counter moved before that look: a look after a timeout that found
            // nothing needs no quiet moment (nobody is writing).
            var moved = true
            while !stopped.withLock({ $0 }) {
                if !wantsWakeups() {
                    // Nobody observes, and reads look at the journal themselves: the watcher does
                    // not chase other processes' writes (while they write without pause it would
                    // look again and again, taking processor time and the cache's lock from the
                    // writers). It looks once per interval, or when kicked (a first observer).
                    _ = kicked.wait(timeout: .now() + .milliseconds(Int(clamping: milliseconds)))
                    if stopped.withLock({ $0 }) { break }
                    seen = prefs_atomic_load(journal.counter)
                    (moved, foundNew) = (true, look())
                    continue
                }
                if !foundNew && moved {
                    // The last look found only this process's writes: stay quiet for a moment
                    // rather than have each of a burst of its writes wake this thread.
                    usleep(UInt32(quietPause.wholeMilliseconds) * 1000)
                    let now = prefs_atomic_load(journal.counter)
                    if now != seen {
                        seen = now
                        foundNew = look()
                        continue
                    }
                }
                if journal.isWritable && wantsWakeups() { prefs_atomic_store(journal.sleepers, 1) }
                let now = prefs_atomic_load(journal.counter)
                if now != seen {
                    seen = now
                    (moved, foundNew) = (true, look())
                    continue
                }
                let timedOut = prefs_futex_wait(journal.counter, seen, milliseconds) == 1
                if stopped.withLock({ $0 }) { break }
                let after = prefs_atomic_load(journal.counter)
                moved = after != seen
                if moved || timedOut {
                    seen = after
                    foundNew = look()
                }
            }
        }
    #endif

    #if canImport(Darwin)
        /// The notify(3) side of a watch: looks on each notification, then says it sleeps (or, after
        /// finding only its own process's writes, waits a moment first).
        private final class NotifiedLooks: @unchecked Sendable {
            let journal: Journal
            let queue: DispatchQueue
            let stopped: Locked<Bool>
            let wantsWakeups: @Sendable () -> Bool
            let look: @Sendable () -> Bool
            var seen: UInt32

            init(
                journal: Journal, queue: DispatchQueue, stopped: Locked<Bool>,
                wantsWakeups: @escaping @Sendable () -> Bool, look: @escaping @Sendable () -> Bool
            ) {
                self.journal = journal
                self.queue = queue
                self.stopped = stopped
                self.wantsWakeups = wantsWakeups
                self.look = look
                seen = prefs_atomic_load(journal.counter)
            }

            /// Runs on `queue`.
            func lookAndSleep() {
                guard !stopped.withLock({ $0 }) else { return }
                seen = prefs_atomic_load(journal.counter)
                if !look() {
                    queue.asyncAfter(deadline: .now() + JournalWatch.quietPause.timeInterval) { [self] in
                        if prefs_atomic_load(journal.counter) != seen { lookAndSleep() } else { sleep() }
                    }
                    return
                }
                sleep()
            }

            private func sleep() {
                guard journal.isWritable && wantsWakeups() else { return }
                prefs_atomic_store(journal.sleepers, 1)
                if prefs_atomic_load(journal.counter) != seen { lookAndSleep() }
            }
        }
    #endif

    /// Makes the watcher look again at once, and ask to be woken from then on if it now wants
    /// to be (a first observer was added).
    package func kick() {
        kicked.signal()
        guard let journal, journal.isWritable else { return }
        // Moving the counter makes a watcher about to sleep look instead; the wake reaches one
        // asleep. (Other stores' watchers look too, and find nothing new.)
        _ = prefs_atomic_increment(journal.counter)
        journal.wakeWatchers()
    }

    /// Stops the watch and waits until `look` will not be called again.
    package func stop() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        kicked.signal()
        #if os(Linux)
            // Moves the counter, then wakes every waiter on the file: a watcher between its last
            // look at `stopped` and its wait then does not sleep (the counter is not what it
            // expects). The others find nothing new and sleep again.
            // (A read-only mapping cannot be written: there the watcher's waits are short.)
            if let journal {
                if journal.isWritable { _ = prefs_atomic_increment(journal.counter) }
                _ = prefs_futex_wake_all(journal.counter)
            }
        #endif
        for source in sources { source.cancel() }
        finished.wait()
        // Waits for a handler that is running now (every later one finds `stopped` set), unless
        // this is that handler (the store let go from inside a look).
        if let queue, DispatchQueue.getSpecific(key: onQueue) != true { queue.sync {} }
    }

    deinit {
        stop()
    }
}
