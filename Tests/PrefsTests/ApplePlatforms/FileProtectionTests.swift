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
}
