#if os(Linux)
    import Foundation
    import Glibc
    import PrefsEngine
    import PrefsSupport
    import Testing

    /// The engine's system-call layer makes a call again when a signal interrupts it.
    @Suite struct SystemCallTests {
        /// The thread blocked in a read, as a `pthread_t` other threads can signal.
        private struct Reader: @unchecked Sendable { var thread: pthread_t? }

        /// A read on an empty pipe, interrupted ten times by a signal whose handler does not ask
        /// for calls to be restarted (`SA_RESTART` unset): each interruption is an `EINTR` that a
        /// bare `read(2)` would return; the layer reads on, and gets the byte written afterwards.
        @Test func aReadInterruptedBySignalsGoesOn() throws {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in }
            action.sa_flags = 0
            sigemptyset(&action.sa_mask)
            var previous = sigaction()
            #expect(sigaction(SIGUSR2, &action, &previous) == 0)
            defer { sigaction(SIGUSR2, &previous, nil) }

            var ends: [Int32] = [-1, -1]
            #expect(pipe(&ends) == 0)
            defer {
                SystemCall.close(ends[0])
                SystemCall.close(ends[1])
            }
            let (readEnd, writeEnd) = (ends[0], ends[1])
            let reader = Locked(Reader())
            let result = Locked<Int?>(nil)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                // Threads the test runner starts may block signals: this one takes SIGUSR2.
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, SIGUSR2)
                pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                reader.withLock { $0.thread = pthread_self() }
                var byte: UInt8 = 0
                let count = SystemCall.read(readEnd, &byte, 1)
                result.withLock { $0 = count == 1 && byte == 42 ? 1 : count }
                done.signal()
            }
            thread.start()
            while reader.withLock({ $0.thread }) == nil { usleep(1_000) }
            let target = reader.withLock { $0.thread }!
            for _ in 0..<10 {
                usleep(20_000)  // the reader is blocked in read(2) by now
                pthread_kill(target, SIGUSR2)
            }
            usleep(20_000)
            #expect(
                result.withLock { $0 } == nil,
                "the read returned on a signal: \(String(describing: result.withLock { $0 }))")
            var byte: UInt8 = 42
            #expect(SystemCall.write(writeEnd, &byte, 1) == 1)
            #expect(done.wait(timeout: .now() + 10) == .success)
            #expect(result.withLock { $0 } == 1)
        }
    }
#endif
