import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// File protection on iOS, watchOS, tvOS and visionOS, done on Linux the way devices do it: the
/// store's files keep the class the app chose whenever they are made, and a locked device's
/// protected journal is an error to wait out, not a broken store.
@Suite struct FileProtectionTests {
    /// SQLite deletes `-wal` and `-shm` when its last connection closes, and the store closes its
    /// connection between calls: each checkpoint's connection makes them anew (with the folder's
    /// class), so each is followed by the store's protection, not only the first.
    @Test func everyConnectionThatMakesSQLitesFilesIsFollowedByTheirProtection() throws {
        let events = Locked<[String]>([])
        var options = SQLiteStore.Options()
        options.faults.protectFiles = { _ in events.withLock { $0.append("protect") } }
        options.faults.atCheckpointStep = { step in
            if step == .afterCommit { events.withLock { $0.append("checkpoint") } }
        }
        let store = try SQLiteStore(path: TestFiles.uniquePath(), options: options)
        for round in 0..<3 {
            try store.setValue(.integer(Int64(round)), forKey: "round")
            try store.flush()
        }
        let log = events.withLock { $0 }
        #expect(log.filter { $0 == "checkpoint" }.count >= 3, "\(log)")
        for (index, event) in log.enumerated() where event == "checkpoint" {
            let rest = log[(index + 1)...]
            #expect(rest.first == "protect", "a checkpoint's files were left with the folder's class: \(log)")
        }
    }

    /// A locked device's journal is unavailable, and then works again without reopening.
    ///
    /// With `.complete`, a locked device makes the mapped journal unreadable (a fault the store
    /// took for "another process cut the journal", until it was reopened). Now a write while
    /// locked throws `.protectedDataUnavailable`, nothing is lost, and after the unlock the same
    /// store writes again without being reopened.
    ///
    /// Linux protects no file by class: the lock is played by cutting the journal's file under
    /// the mapping (its pages then fault, as protected pages do) while a fault says the data is
    /// locked away, and the unlock by putting its bytes back.
    @Test func aLockedDevicesJournalIsUnavailableThenWorksAgainWithoutReopening() throws {
        try lockedJournalScenario()
    }

    /// `.completeUnlessOpen` on a locked device: writes go on while SQLite's files are locked away.
    ///
    /// The journal, held open, goes on, while SQLite's files, closed between calls, do not open
    /// again until the unlock. Writes go on past the
    /// journal's limit (each move waits; the write that moved it in line threw), the wait is
    /// told once (a background move's failure was told at every write past the threshold), and
    /// after the unlock everything moves.
    @Test func writesGoOnWhileSQLitesFilesAreLockedAway() throws {
        let path = TestFiles.uniquePath("unless-open")
        let locked = Locked(false)
        let issues = IssueRecorder()
        var options = SQLiteStore.Options()
        options.diagnostics = issues.diagnostics
        options.faults.sqliteFilesLocked = { locked.withLock { $0 } }
        options.faults.journalLimit = 4 << 20
        let store = try SQLiteStore(path: path, options: options)
        locked.withLock { $0 = true }
        let big = String(repeating: "y", count: 1 << 20)
        for round in 0..<12 {
            try store.setValue(.string(big + "\(round)"), forKey: "big\(round % 8)")
        }
        #expect(store.value(forKey: "big3") == .string(big + "11"))
        let rows = { try SQLiteConnection(path: path).integer("SELECT count(*) FROM prefs_entries") ?? 0 }
        #expect(try rows() == 0, "nothing reached SQLite while locked")
        let told = issues.issues.filter { "\($0)".contains("once the device is unlocked") }
        #expect(told.count == 1, "\(issues.issues.map { "\($0)" })")

        locked.withLock { $0 = false }
        try store.flush()
        #expect(try rows() == 8)
        #expect(try SQLiteStore(path: path).value(forKey: "big0") == .string(big + "8"))
    }

    private func lockedJournalScenario() throws {
        let locked = Locked(false)
        var options = SQLiteStore.Options()
        options.faults.lockedData = { _ in locked.withLock { $0 } }
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path, options: options)
        try store.setValue(.string("before"), forKey: "a")

        let journal = path + "-prefs"
        let saved = try Data(contentsOf: URL(fileURLWithPath: journal))
        locked.withLock { $0 = true }
        #expect(truncate(journal, 0) == 0)
        #expect {
            try store.setValue(.string("while locked"), forKey: "b")
        } throws: { error in
            (error as? StoreError)?.kind == .protectedDataUnavailable
        }

        // Unlocked: the same file holds its bytes again.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: journal))
        try handle.write(contentsOf: saved)
        try handle.close()
        locked.withLock { $0 = false }
        try store.setValue(.string("after"), forKey: "b")
        #expect(store.value(forKey: "a") == .string("before"))
        #expect(store.value(forKey: "b") == .string("after"))
        try store.flush()
        let again = try SQLiteStore(path: path)
        #expect(again.value(forKey: "a") == .string("before"))
        #expect(again.value(forKey: "b") == .string("after"))
    }

    /// A store that only reads sees other processes' writes again once the device is unlocked.
    ///
    /// Only the holder of the journal's lock mapped locked-away data again, which a store that
    /// only reads never is: its reads answered from the zeros the fault left (the header's
    /// sequence read 0), so it never saw another write, nor told its observers, until reopened.
    /// Now its reads and its watch map the journal again once it is readable. While locked, its
    /// reads answer from what it has (no crash, no error).
    @Test func aStoreThatOnlyReadsSeesWritesAgainOnceTheDeviceIsUnlocked() async throws {
        let locked = Locked(false)
        var options = SQLiteStore.Options()
        options.faults.lockedData = { _ in locked.withLock { $0 } }
        let path = TestFiles.uniquePath()
        let writer = try SQLiteStore(path: path, options: options)
        try writer.setValue(.string("before"), forKey: "a")
        // The watch's safety-net look, short: on Linux the watch waits on a word of the mapping,
        // which the fault replaced with a page of zeros, so the writer's wake-up misses it until
        // that look (Apple platforms wake it with notify(3), outside the mapping).
        var readerOptions = options
        readerOptions.refreshInterval = .milliseconds(300)
        let reader = try SQLiteStore(path: path, options: readerOptions)
        #expect(reader.value(forKey: "a") == .string("before"))
        let heard = Locked<[String]>([])
        let observation = reader.observe { change in heard.withLock { $0 += change.values.keys.map(\.name) } }
        defer { observation.cancel() }

        let journal = path + "-prefs"
        let saved = try Data(contentsOf: URL(fileURLWithPath: journal))
        locked.withLock { $0 = true }
        #expect(truncate(journal, 0) == 0)
        // Locked: the read touches the journal's pages, which fault; it answers what it has.
        #expect(reader.value(forKey: "a") == .string("before"))
        #expect(reader.value(forKey: "b") == nil)

        // Unlocked: the same file holds its bytes again, and another store writes.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: journal))
        try handle.write(contentsOf: saved)
        try handle.close()
        locked.withLock { $0 = false }
        try writer.setValue(.string("after"), forKey: "b")
        #expect(
            await eventually(within: 3) { heard.withLock { $0 }.contains("b") },
            "the reader's watch caught up and its observer heard the write")
        #expect(reader.value(forKey: "b") == .string("after"), "the reader sees the write")
        #expect(reader.value(forKey: "a") == .string("before"))
    }
}
