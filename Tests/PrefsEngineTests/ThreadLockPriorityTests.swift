#if os(Linux)
    import CPrefsShared
    import CPrefsTestSupport
    import Foundation
    import Glibc
    import PrefsSupport
    import Testing

    /// The journal's thread lock (Apple's lock, and Linux's under `PREFS_JOURNAL_LOCK=flock`)
    /// lends a waiter's priority to its holder.
    ///
    /// The classic inversion, made with real-time priorities on one processor: a low-priority
    /// holder (a background checkpoint), a high-priority waiter (the main thread's write), and a
    /// middle-priority thread that keeps the processor busy for 1.5 s. Without inheritance the
    /// holder never runs until the middle thread is done, and the waiter waits all that time;
    /// with it, the holder runs at the waiter's priority, finishes its 150 ms of work, and the
    /// waiter has the lock in about that.
    @Suite struct ThreadLockPriorityTests {
        /// The lock, handed to the test's threads (`@unchecked`: it is a lock).
        private struct SharedLock: @unchecked Sendable { let pointer: OpaquePointer }

        /// What the threads saw.
        private struct Outcome: Sendable {
            var holderAcquired = false
            var holderReleased = false
            var waiterAcquired = false
            var heldWhenWaiterAsked = false
            var waitedNanoseconds: UInt64 = 0
        }

        private static let canUseRealTimePriorities: Bool = {
            var parameters = sched_param(sched_priority: 1)
            let thread = pthread_self()
            var policy: Int32 = 0
            var before = sched_param()
            pthread_getschedparam(thread, &policy, &before)
            guard pthread_setschedparam(thread, SCHED_FIFO, &parameters) == 0 else { return false }
            pthread_setschedparam(thread, policy, &before)
            return true
        }()

        /// Runs the calling thread at real-time `priority`, then on one processor only (in that
        /// order: a thread of ordinary priority moved onto a processor a real-time thread keeps
        /// busy would never run again to raise itself).
        private static func becomeRealTime(_ priority: Int32) {
            var parameters = sched_param(sched_priority: priority)
            pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
            _ = prefs_test_pin_thread_to_one_processor()
        }

        private static func threadCPUNanoseconds() -> UInt64 {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        }

        private static func spin(wallNanoseconds: UInt64) {
            let end = DispatchTime.now().uptimeNanoseconds + wallNanoseconds
            while DispatchTime.now().uptimeNanoseconds < end {}
        }

        @Test func aWaiterLendsItsPriorityToTheHolder() throws {
            guard Self.canUseRealTimePriorities else {
                // CI runs as root on machines that allow them: there, a refusal is a failure.
                let reason =
                    "real-time priorities are refused here (needs CAP_SYS_NICE and real-time time in this cgroup)"
                if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("\(reason)") }
                print("ThreadLockPriorityTests skipped: \(reason)")
                return
            }
            let made = try #require(prefs_thread_lock_create())
            defer { prefs_thread_lock_destroy(made) }
            let shared = SharedLock(pointer: made)
            #expect(prefs_thread_lock_lends_priority(made) == 1)
            let path = EngineTestFiles.uniquePath("thread-lock")
            let descriptor = open(path, O_RDWR | O_CREAT, 0o600)
            defer {
                close(descriptor)
                unlink(path)
            }
            let outcome = Locked(Outcome())
            let flock = Int32(PREFS_LOCK_KIND_FLOCK)

            // The scene is set by a thread of its own at the highest priority of the four, on
            // the same processor: it runs whenever it is ready, so each thread is started when
            // the scene needs it even on a machine with one processor (where an ordinary thread
            // would wait out the middle thread's spin and start the waiter too late to wait).
            let finished = DispatchSemaphore(value: 0)
            let director = Thread {
                Self.becomeRealTime(40)
                let holding = DispatchSemaphore(value: 0)
                let middleRunning = DispatchSemaphore(value: 0)
                let waited = DispatchSemaphore(value: 0)
                let holder = Thread {
                    Self.becomeRealTime(10)
                    let acquired =
                        prefs_lock_acquire(flock, nil, shared.pointer, descriptor, 10_000)
                        == Int32(PREFS_LOCK_ACQUIRED)
                    outcome.withLock { $0.holderAcquired = acquired }
                    holding.signal()
                    guard acquired else { return }
                    // 150 ms of its own processor time: time kept off the processor does not count.
                    let start = Self.threadCPUNanoseconds()
                    while Self.threadCPUNanoseconds() - start < 150_000_000 {}
                    outcome.withLock { $0.holderReleased = true }
                    prefs_lock_release(flock, nil, shared.pointer, descriptor)
                }
                holder.start()
                holding.wait()

                let middle = Thread {
                    Self.becomeRealTime(20)
                    middleRunning.signal()
                    Self.spin(wallNanoseconds: 1_500_000_000)
                }
                middle.start()
                middleRunning.wait()

                let waiter = Thread {
                    Self.becomeRealTime(30)
                    let start = DispatchTime.now().uptimeNanoseconds
                    let heldWhenAsked = outcome.withLock { !$0.holderReleased }
                    let acquired =
                        prefs_lock_acquire(flock, nil, shared.pointer, descriptor, 10_000)
                        == Int32(PREFS_LOCK_ACQUIRED)
                    let elapsed = DispatchTime.now().uptimeNanoseconds - start
                    if acquired { prefs_lock_release(flock, nil, shared.pointer, descriptor) }
                    outcome.withLock {
                        $0.waiterAcquired = acquired
                        $0.heldWhenWaiterAsked = heldWhenAsked
                        $0.waitedNanoseconds = elapsed
                    }
                    waited.signal()
                }
                waiter.start()
                waited.wait()
                finished.signal()
            }
            director.start()
            finished.wait()

            let result = outcome.withLock { $0 }
            #expect(result.holderAcquired, "the holder did not get the lock")
            #expect(result.waiterAcquired, "the waiter did not get the lock within 10 s")
            // Otherwise the scene did not happen, and the time below says nothing.
            #expect(result.heldWhenWaiterAsked, "the holder had let go before the waiter asked")
            let milliseconds = result.waitedNanoseconds / 1_000_000
            // About 150 ms with inheritance; at least the middle thread's 1.5 s without.
            #expect(milliseconds > 0 && milliseconds < 1_000, "the waiter waited \(milliseconds) ms")
        }
    }
#endif
