import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Nothing lost, nothing hung": items 3 (a deleted or replaced file) and 15 (closing on
/// the releasing thread).
@Suite struct SQLiteFileTests {
    /// Expects a write of `value` to `store` to throw `.replaced`.
    private func expectReplaced(
        writing value: Int64, to store: SQLiteStore, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try store.setValue(.integer(value), forKey: "k")
        } throws: { error in
            (error as? StoreError)?.kind == .replaced
        }
    }

    @Test func aDeletedFileMakesWritesThrow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        try FileManager.default.removeItem(atPath: path)
        // At once: the very next write (it used to succeed, and be lost, for a few milliseconds).
        expectReplaced(writing: 2, to: store)
        #expect(store.value(forKey: "k") == .integer(1))
    }

    @Test func aFileMovedOverThePathMakesWritesThrow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        let other = TestFiles.uniquePath()
        do {
            let second = try SQLiteStore(path: other)
            try second.setValue(.integer(9), forKey: "k")
        }
        #expect(rename(other, path) == 0)
        #expect {
            try Preferences(store: store).update { p in p[.launchCount] = 5 }
        } throws: { error in
            (error as? StoreError)?.kind == .replaced
        }
        #expect(store.value(forKey: "k") == .integer(1))
    }

    @Test func aFileMovedAwayMakesTheNextWriteThrow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        #expect(rename(path, path + ".moved") == 0)
        // The very next write (it used to go on into the moved file for up to a millisecond).
        expectReplaced(writing: 2, to: store)
    }

    @Test func aFileDeletedByAnotherProcessMakesTheNextWriteThrow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        let removed = try ChildProcess.run(URL(fileURLWithPath: "/bin/rm"), [path])
        #expect(removed.status == 0, "\(removed.stderr)")
        expectReplaced(writing: 2, to: store)
    }

    /// Two stores of one file in a process share what watches it: the first one let go must
    /// not leave the second one blind.
    @Test func aStoreLetGoLeavesTheOtherStoreOfItsFileWatching() throws {
        let path = TestFiles.uniquePath()
        let kept = try SQLiteStore(path: path)
        do {
            let other = try SQLiteStore(path: path)
            try other.setValue(.integer(1), forKey: "k")
        }
        try kept.setValue(.integer(2), forKey: "k")
        try FileManager.default.removeItem(atPath: path)
        expectReplaced(writing: 3, to: kept)
    }

    /// Other events on the file (its mode changed) send the check to the file once; writes go on.
    @Test func aChangeOfTheFilesModeLeavesWritesGoing() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        #expect(chmod(path, 0o600) == 0)
        for value in 2...5 { try store.setValue(.integer(Int64(value)), forKey: "k") }
        #expect(store.value(forKey: "k") == .integer(5))
    }

    /// The store is released, and its file closed, when the caller lets go of it, on the
    /// caller's thread, even with the refresh timer busy catching up with another writer.
    @Test func releasingTheStoreClosesTheFileAtOnce() throws {
        let path = TestFiles.uniquePath()
        let writer = try SQLiteStore(path: path)
        let stop = Locked(false)
        let writing = DispatchGroup()
        writing.enter()
        Thread.detachNewThread {
            defer { writing.leave() }
            var count: Int64 = 0
            while !stop.withLock({ $0 }) {
                count += 1
                try? writer.setValue(.integer(count), forKey: "w\(count % 50)")
            }
        }
        defer {
            stop.withLock { $0 = true }
            writing.wait()
        }
        for round in 0..<200 {
            var store: SQLiteStore? = try SQLiteStore(
                path: path, options: .init(refreshInterval: .microseconds(50)))
            weak let released = store
            let core = store!.core
            usleep(UInt32.random(in: 0...500))
            store = nil
            #expect(released == nil, "round \(round): the store outlived its last user reference")
            // Closed by then: the connection refuses any further work.
            #expect(throws: StoreError.self) { try core.sqlite.withDatabase(during: "a test") { _ in } }
            if released != nil { break }
        }
    }
}
