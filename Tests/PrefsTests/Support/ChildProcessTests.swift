#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// The test support's child processes never hang a test run: a child that does not end is
    /// killed, and a pipe another process holds open does not keep a finished child's test waiting.
    @Suite struct ChildProcessTests {
        @Test func aChildThatNeverEndsIsKilledAtItsBound() throws {
            let started = Date()
            let output = try ChildProcess.start(URL(fileURLWithPath: "/bin/sleep"), ["600"]).finish(within: 1)
            #expect(output.status == SIGKILL && output.killedAtBound)
            #expect(output.stderr.contains("killed this child"), "\(output.stderr)")
            #expect(Date().timeIntervalSince(started) < 60)
        }

        /// The shell ends at once; the `sleep` it leaves behind holds its standard output open.
        @Test func aPipeHeldByAnotherProcessDoesNotHoldUpAFinishedChild() throws {
            let child = try ChildProcess.start(
                URL(fileURLWithPath: "/bin/sh"), ["-c", "sleep 600 & echo $!; echo done"])
            let started = Date()
            let output = child.finish(within: 120)
            if let leftBehind = output.stdout.split(separator: "\n").first.flatMap({ Int32($0) }) {
                kill(leftBehind, SIGKILL)
            }
            #expect(output.status == 0)
            #expect(output.stdout.hasSuffix("done"), "what the child printed arrives: \(output.stdout)")
            #expect(output.stderr.contains("still open"), "\(output.stderr)")
            #expect(Date().timeIntervalSince(started) < 60)
        }

        @Test func stopEndsAChildWithItsSignal() throws {
            let child = try ChildProcess.start(URL(fileURLWithPath: "/bin/sleep"), ["600"])
            let output = child.stop(SIGKILL, within: 30)
            #expect(output.status == SIGKILL && !output.killedAtBound)
            #expect(
                !output.stderr.contains("killed this child"), "ended by the signal sent, not at the bound")
        }

        #if os(Linux)
            /// A child holds its three streams and nothing else of this process's: a descriptor
            /// opened here without close-on-exec (as C code and libraries open them) is not in it.
            @Test func aChildHoldsOnlyItsThreeStreams() throws {
                let inherited = open("/dev/null", O_RDONLY)
                try #require(inherited >= 3)
                defer { close(inherited) }
                let child = try ChildProcess.start(URL(fileURLWithPath: "/bin/sleep"), ["600"])
                defer { child.killIfRunning() }
                let held = try FileManager.default.contentsOfDirectory(
                    atPath: "/proc/\(child.processIdentifier)/fd")
                #expect(Set(held) == ["0", "1", "2"], "the child holds \(held.sorted())")
            }
        #endif

        /// A child that has ended and been collected is sent no signal: its id may be another's.
        @Test func anEndedChildIsSentNoSignal() throws {
            let child = try ChildProcess.start(URL(fileURLWithPath: "/bin/sh"), ["-c", "exit 7"])
            #expect(child.finish(within: 30).status == 7)
            #expect(!child.isRunning)
            child.signal(SIGCONT)
            child.killIfRunning()
            #expect(child.finish(within: 30).status == 7, "the status it ended with stays")
        }

        /// A child that ignores the signal sent is killed at the bound, and its output says so.
        @Test func aChildThatDoesNotEndOnItsSignalIsKilledAtTheBound() throws {
            let child = try ChildProcess.start(
                URL(fileURLWithPath: "/bin/sh"), ["-c", "trap '' TERM; exec sleep 600"])
            let output = child.stop(SIGTERM, within: 1)
            #expect(output.killedAtBound)
            #expect(output.status == SIGKILL)
            #expect(output.stderr.contains("killed this child"), "\(output.stderr)")
        }
    }
#endif
