import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Letting a store go, as an app does on its main thread: it waits for no work in the background.
@Suite struct StoreReleaseTests {
    /// Letting a store go does not wait for its background checkpoint (issue 48).
    ///
    /// One waiting for SQLite's write lock, which another process holds, ended only at the lock timeout, and
    /// the release (often on the main thread) waited for it. Now the release ends it at its next
    /// step; nothing is lost (the records stay in the journal for the next store).
    @Test func lettingAStoreGoDoesNotWaitForItsBackgroundCheckpoint() throws {
        let path = TestFiles.uniquePath("release-during-checkpoint")
        var store: SQLiteStore? = try SQLiteStore(path: path)
        try store!.setValue(.integer(1), forKey: "a")
        // Another connection holds SQLite's write lock: the checkpoint waits for it.
        let other = try SQLiteConnection(path: path)
        try other.run("BEGIN IMMEDIATE")
        store!.core.checkpointer.queue()
        usleep(300_000)  // the background checkpoint is waiting for SQLite's lock
        #expect(store!.core.checkpointer.queued.load() == 1, "the checkpoint is still running")
        let started = ContinuousClock.now
        store = nil
        let took = ContinuousClock.now - started
        try other.run("ROLLBACK")
        // The close's own move waits a moment for the lock, and the background one ended at
        // once; before, the release waited for the whole lock timeout (10 s).
        #expect(took < .seconds(2), "letting the store go took \(took)")
        #expect(try SQLiteStore(path: path).value(forKey: "a") == .integer(1), "nothing lost")
    }
}
