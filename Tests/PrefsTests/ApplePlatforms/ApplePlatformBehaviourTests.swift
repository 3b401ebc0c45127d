import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsJournal

/// `UserDefaults` as Apple's Foundation behaves: it posts `didChangeNotification` synchronously,
/// on the writing thread, after every single write (Foundation on Linux posts nothing).
private final class AnnouncingDefaults: UserDefaults {
    override func set(_ value: Any?, forKey defaultName: String) {
        super.set(value, forKey: defaultName)
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
    }

    override func removeObject(forKey defaultName: String) {
        super.removeObject(forKey: defaultName)
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
    }
}

/// Issue "Right on Apple platforms": what can be checked on Linux, with Foundation made to behave
/// as Apple's where needed.
@Suite struct ApplePlatformBehaviourTests {
    /// Item 4: a write of several keys is announced once, with its final values, even though
    /// Foundation announces each single `set` while the write is half done.
    @Test func aMultiKeyWriteIsAnnouncedOnceWithItsFinalValues() async throws {
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(AnnouncingDefaults(suiteName: suite))
        let store = UserDefaultsStore(defaults, domainName: suite)
        let prefs = IssueRecorder().preferences(store)
        prefs[.volume] = 0.1
        prefs[.launchCount] = 1
        let seen = Locked<[StoreChange]>([])
        let observation = prefs.observeAll { change in seen.withLock { $0.append(change) } }
        try prefs.update { p in
            p[.volume] = 0.9
            p[.launchCount] = 2
            p.reset(.username)
        }
        prefs.reset(.volume, .launchCount)
        #expect(await eventually { seen.withLock { $0.count } >= 2 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(
            seen.withLock { $0 } == [
                StoreChange(values: [
                    "volume": .set(.double(0.9)), "launchCount": .set(.integer(2)), "username": .removed,
                ]),
                StoreChange(values: ["volume": .removed, "launchCount": .removed]),
            ])
        observation.cancel()
    }

    /// Item 4: another `UserDefaults` object's announcements are not this store's business.
    @Test func onlyTheStoresOwnDefaultsAreWatched() async throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        let store = UserDefaultsStore(plain, domainName: suite)
        let seen = Locked<[StoreChange]>([])
        let observation = store.observe { change in seen.withLock { $0.append(change) } }
        plain.set("raw", forKey: "username")
        let other = try #require(UserDefaults(suiteName: TestDefaults.uniqueSuiteName()))
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: other)
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.withLock { $0 }.isEmpty)
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: plain)
        #expect(
            await eventually {
                seen.withLock { $0 } == [StoreChange(values: ["username": .set(.string("raw"))])]
            })
        observation.cancel()
    }

    /// Item 6: `.powerSafe` asks SQLite for `F_FULLFSYNC` (a no-op off Apple platforms).
    @Test(arguments: [(SQLiteStore.Durability.powerSafe, Int64(1)), (.committed, 0)])
    func powerSafeAsksForFullSync(durability: SQLiteStore.Durability, expected: Int64) throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath(), options: .init(durability: durability))
        for _ in 0..<2 {
            let (full, checkpoint) = try store.core.sqlite.withDatabase(during: "a test") { database in
                (
                    try database.connection.integer("PRAGMA fullfsync"),
                    try database.connection.integer("PRAGMA checkpoint_fullfsync")
                )
            }
            #expect(full == expected)
            #expect(checkpoint == expected)
        }
    }

    #if os(Linux)
        /// Item 8: between calls a `SQLiteStore` holds no lock on its SQLite files.
        ///
        /// An open WAL connection would keep a shared lock on `-shm` and on the database, and iOS
        /// terminates an app suspended with a file lock in an App Group container. Read from
        /// `/proc/locks` after writes and a checkpoint.
        @Test func betweenCallsNoSQLiteFileIsLocked() throws {
            let path = TestFiles.uniquePath("suspension")
            let store = try SQLiteStore(path: path)
            // Right after opening (the connection that opened the file used to stay open until
            // the first checkpoint), after writes, after a flush, and after a write after it.
            try expectNoLockHeld(on: path, "after opening")
            for index in 0..<100 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            try expectNoLockHeld(on: path, "after writes")
            try store.flush()
            try expectNoLockHeld(on: path, "after flush()")
            try store.setValue(.string("after"), forKey: "last")
            #expect(store.value(forKey: "last") == .string("after"))
            try expectNoLockHeld(on: path, "after a write after flush()")
            // And the next checkpoint opens the connection again.
            try store.flush()
            #expect(try SQLiteStore(path: path).value(forKey: "last") == .string("after"))
        }

        /// Records an issue for each lock this process holds on the store's SQLite files (in
        /// `/proc/locks`: "1: POSIX  ADVISORY  READ 1234 08:01:5678 128 128", pid then device:inode).
        private func expectNoLockHeld(on path: String, _ when: String) throws {
            func inode(_ file: String) -> UInt64? {
                var info = stat()
                return stat(file, &info) == 0 ? UInt64(info.st_ino) : nil
            }
            let inodes = Set(["", "-wal", "-shm"].compactMap { inode(path + $0) })
            let locks = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
            let held = locks.split(separator: "\n").filter { line in
                let fields = line.split(separator: " ")
                guard fields.count >= 6, let pid = Int32(fields[4]), pid == getpid(),
                    let found = fields[5].split(separator: ":").last.flatMap({ UInt64($0) })
                else { return false }
                return inodes.contains(found)
            }
            #expect(held.isEmpty, "locks held \(when): \(held)")
        }
    #endif

    /// Data protection: a store's files are readable from the first unlock by default (the
    /// journal is read on every read, so `.complete` would lock a widget out 10 s after the
    /// device locks), and a refused open before that unlock is a typed error saying so. (Only
    /// Apple platforms protect files; the choice and the mapping are the same code everywhere.)
    @Test func dataProtectionDefaultsToFirstUnlockAndALockedFileIsATypedError() {
        #expect(SQLiteStore.Options().fileProtection == .completeUntilFirstUserAuthentication)
        typealias Protection = SQLiteStore.FileProtection
        #expect(
            Protection.kind(ofOpenFailure: EPERM, platformProtectsFiles: true) == .protectedDataUnavailable)
        #expect(Protection.kind(ofOpenFailure: EACCES, platformProtectsFiles: true) == nil)
        #expect(Protection.kind(ofOpenFailure: EPERM, platformProtectsFiles: false) == nil)
        let refused = SQLiteStoreError(
            path: "/p.sqlite",
            SQLiteConnection.Failure(code: 14, message: "unable to open", systemErrno: EPERM))
        #expect(refused.kind == (Protection.platformProtectsFiles ? .protectedDataUnavailable : .cannotOpen))
    }

    /// A background checkpoint whose expiring activity expires (the system suspending the app)
    /// before its commit is abandoned cleanly: nothing reaches SQLite, nothing is lost, no lock is
    /// kept, and the next checkpoint moves everything.
    @Test func aCheckpointCutShortBySuspensionLosesNothing() async throws {
        let path = TestFiles.uniquePath("expiring")
        var options = SQLiteStore.Options()
        options.faults.expireAtCheckpointStep = .beforeCommit
        let reached = Locked<[SQLiteStore.CheckpointStep]>([])
        options.faults.atCheckpointStep = { step in reached.withLock { $0.append(step) } }
        let store = try SQLiteStore(path: path, options: options)
        let payload = String(repeating: "x", count: 4_000)
        // 300 values of 4 KB: past the 1 MiB at which a write queues a background checkpoint.
        for index in 0..<300 { try store.setValue(.string("\(index)\(payload)"), forKey: "k\(index)") }
        let core = store.core
        #expect(await eventually { reached.withLock { $0.contains(.beforeCommit) } })
        #expect(await eventually { core.checkpointer.queued.load() == 0 })
        #expect(!reached.withLock { $0.contains(.afterCommit) }, "the expired checkpoint committed")
        let checkpointed = try SQLiteConnection(path: path).integer(
            "SELECT value FROM prefs_meta WHERE name = 'checkpointed_sequence'")
        #expect(checkpointed == nil || checkpointed == 0, "the expired checkpoint committed")
        #expect((store.core.journal?.usedBytes ?? 0) > 1 << 20, "the records left the journal")
        #expect(store.value(forKey: "k299") == .string("299\(payload)"))
        try store.flush()  // in the foreground: no expiring activity
        let moved = try SQLiteConnection(path: path).integer("SELECT count(*) FROM prefs_entries")
        #expect(moved == 300)
    }

    /// Item 9: a domain that does not exist yet is not marked as moved in, so it moves once it
    /// exists.
    @Test func movingInFromAMissingDomainIsNotMarkedDone() throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        let first = try store.moveIn(fromUserDefaultsDomain: suite, using: defaults)
        #expect(first == SQLiteStore.MoveInReport(copied: [], keptExisting: [], alreadyMovedIn: false))
        defaults.set("Zhuo", forKey: "name")
        #expect(defaults.synchronize())
        let second = try store.moveIn(fromUserDefaultsDomain: suite, using: defaults)
        #expect(second.copied == ["name"])
        #expect(store.value(forKey: "name") == .string("Zhuo"))
        #expect(try store.moveIn(fromUserDefaultsDomain: suite, using: defaults).alreadyMovedIn)
    }

    /// Item 9: a suite Foundation refuses is a clear error, not the standard defaults in disguise.
    @Test func aSuiteFoundationRefusesIsAnError() throws {
        let name = "NSGlobalDomain"
        if UserDefaults(suiteName: name) == nil {
            #expect(throws: UserDefaultsStoreError(kind: .suiteRefused, suite: name)) {
                try UserDefaultsStore(suiteName: name)
            }
            // Moving such a domain in throws the same typed error, not a SQLite error's text.
            let store = try SQLiteStore(path: TestFiles.uniquePath())
            #expect(throws: UserDefaultsStoreError(kind: .suiteRefused, suite: name)) {
                try store.moveIn(fromUserDefaultsDomain: name)
            }
        } else {
            // Foundation on Linux opens it; the store then is that suite, never `.standard`.
            #expect(try UserDefaultsStore(suiteName: name).domainName == name)
        }
    }
}
