import Dispatch
import Foundation
import PrefsSupport
import Testing

@testable import PrefsEngine

/// The check before every write that the store's file is still at its path, and the kernel's
/// queue of file events it relies on where there is one (Linux).
@Suite struct OpenedFileCheckTests {
    private func makeFile() throws -> String {
        let path = EngineTestFiles.uniquePath("check")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        return path
    }

    /// A check of the file now at `path`.
    private func makeCheck(of path: String, watched: Bool = true) -> OpenedFileCheck {
        OpenedFileCheck(path: path, opened: FileIdentity(path: path), watched: watched)
    }

    @Test(arguments: [true, false])
    func aDeletedFileFailsTheNextCheck(watched: Bool) throws {
        let path = try makeFile()
        let check = makeCheck(of: path, watched: watched)
        var looks = OpenedFileCheck.Looks()
        try check.verify(&looks)
        try check.verify(&looks)
        #expect(unlink(path) == 0)
        #expect(throws: JournalError.self) { try check.verify(&looks) }
        // And every check after it: the failure is not forgotten.
        #expect(throws: JournalError.self) { try check.verify(&looks) }
    }

    @Test(arguments: [true, false])
    func aFileMovedAwayFailsTheNextCheck(watched: Bool) throws {
        let path = try makeFile()
        let check = makeCheck(of: path, watched: watched)
        var looks = OpenedFileCheck.Looks()
        try check.verify(&looks)
        #expect(rename(path, path + ".moved") == 0)
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        // Watched, the move itself is an event. Unwatched, only the path's look-up finds it (at
        // most once per tick of a clock), which a fresh `Looks` forces.
        if !watched { looks = OpenedFileCheck.Looks() }
        #expect(throws: JournalError.self) { try check.verify(&looks) }
    }

    /// Checks on several threads share the process's queue: events on one file while the others
    /// are checked make no check fail, and a deletion fails only the deleted file's check.
    @Test func checksOnSeveralThreadsWhileEventsArrive() throws {
        let paths = try (0..<4).map { _ in try makeFile() }
        let checks = paths.map { makeCheck(of: $0) }
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: checks.count + 1) { index in
            guard index < checks.count else {
                for round in 0..<200 { _ = chmod(paths[round % paths.count], round % 2 == 0 ? 0o600 : 0o644) }
                return
            }
            var looks = OpenedFileCheck.Looks()
            for _ in 0..<2_000 {
                do { try checks[index].verify(&looks) } catch { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(unlink(paths[0]) == 0)
        var looks = (0..<checks.count).map { _ in OpenedFileCheck.Looks() }
        #expect(throws: JournalError.self) { try checks[0].verify(&looks[0]) }
        for index in 1..<checks.count { try checks[index].verify(&looks[index]) }
    }

    #if os(Linux)
        /// CI runs on Linux: the fast path must be the one tested, not the fallback.
        @Test func storesOnLinuxAreWatched() throws {
            let path = try makeFile()
            #expect(makeCheck(of: path).isWatched)
        }

        @Test func theQueueIsQuietUntilSomethingHappensToAWatchedFile() throws {
            let events = try #require(FileEvents())  // a queue of its own: tests run side by side
            let path = try makeFile()
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(descriptor) }
            let watch = try #require(events.watch(descriptor))
            defer { events.unwatch(watch) }
            let mark = events.discardWaiting()
            #expect(events.isQuiet(since: mark))
            #expect(chmod(path, 0o600) == 0)  // a change of attributes: an event, not a failure
            #expect(!events.isQuiet(since: mark))
            let next = events.discardWaiting()
            #expect(events.isQuiet(since: next))
            // Another check finding the queue empty takes nothing from anyone: stores taking
            // turns to write do not send each other to the file.
            #expect(events.discardWaiting() == next)
            #expect(events.isQuiet(since: next))
            // Another check emptying the queue of an event counts as a change for every mark.
            #expect(chmod(path, 0o644) == 0)
            _ = events.discardWaiting()
            #expect(!events.isQuiet(since: next))
        }

        @Test func twoChecksOfOneFileShareItsWatchUntilTheLastLetsGo() throws {
            let events = try #require(FileEvents())  // a queue of its own: tests run side by side
            let path = try makeFile()
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(descriptor) }
            let first = try #require(events.watch(descriptor))
            let second = try #require(events.watch(descriptor))
            #expect(first == second)  // the kernel's one watch of the file
            events.unwatch(first)
            var mark = events.discardWaiting()
            #expect(chmod(path, 0o600) == 0)
            #expect(!events.isQuiet(since: mark), "the second check no longer hears of the file")
            events.unwatch(second)
            mark = events.discardWaiting()
            #expect(chmod(path, 0o644) == 0)
            #expect(events.isQuiet(since: mark), "the file is still watched after both let go")
        }
    #endif
}
