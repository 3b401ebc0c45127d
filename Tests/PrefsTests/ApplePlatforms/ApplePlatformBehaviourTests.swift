import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

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
        let store = UserDefaultsStore(defaults, domain: suite)
        let prefs = IssueRecorder().preferences(store)
        prefs[.volume] = 0.1
        prefs[.launchCount] = 1
        let seen = Locked<[StoreChange]>([])
        let observation = prefs.observeAllChanges { change in seen.withLock { $0.append(change) } }
        try prefs.update { p in
            p[.volume] = 0.9
            p[.launchCount] = 2
            p.reset(.username)
        }
        prefs.reset(.volume, .launchCount)
        #expect(await eventually { seen.withLock { $0.count } >= 2 })
        store.waitForEveryDelivery()
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
        let store = UserDefaultsStore(plain, domain: suite)
        let seen = Locked<[StoreChange]>([])
        let observation = store.observe { change in seen.withLock { $0.append(change) } }
        plain.set("raw", forKey: "username")
        let other = try #require(UserDefaults(suiteName: TestDefaults.uniqueSuiteName()))
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: other)
        store.waitForEveryDelivery()
        #expect(seen.withLock { $0 }.isEmpty)
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: plain)
        #expect(
            await eventually {
                seen.withLock { $0 } == [StoreChange(values: ["username": .set(.string("raw"))])]
            })
        observation.cancel()
    }

    /// A checkpoint's commit asks SQLite for `F_FULLFSYNC` (a no-op off Apple platforms) whatever
    /// the durability, on the store's first connection and on each one opened again: `flush()`
    /// promises to survive power loss, and the journal drops what a checkpoint moved.
    @Test(arguments: [SQLiteStore.Durability.powerSafe, .committed])
    func checkpointsAskForAFullSyncWhateverTheDurability(durability: SQLiteStore.Durability) throws {
        let expected: Int64 = 1
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
        // A protected file: its metadata can be read, its bytes cannot.
        let readable: (String) -> Int32 = { _ in 0 }
        #expect(
            JournalError.isProtectedData(
                openFailure: EPERM, path: "/a/p", platformProtectsFiles: true, lookUp: readable))
        #expect(
            !JournalError.isProtectedData(
                openFailure: EACCES, path: "/a/p", platformProtectsFiles: true, lookUp: readable))
        #expect(
            !JournalError.isProtectedData(
                openFailure: EPERM, path: "/a/p", platformProtectsFiles: false, lookUp: readable))
        let refused = StoreError(
            path: "/p.sqlite",
            SQLiteConnection.Failure(code: 14, message: "unable to open", systemErrno: EPERM))
        #expect(
            refused.kind == (JournalError.platformProtectsFiles ? .protectedDataUnavailable : .cannotOpen))
    }

    /// A journal that could not be made while the device is locked (the create refused with
    /// `EPERM`, so the read-only open then finds no file) is protected data, said by the create's
    /// reason: the read's `ENOENT` made it "no such file", `.cannotOpen`, and the store was never
    /// opened again after the unlock.
    @Test func aJournalRefusedWhileLockedIsDecidedByTheCreatesReason() {
        #expect(Journal.OpenedFile.reason(writeFailure: EPERM, readFailure: ENOENT) == EPERM)
        #expect(Journal.OpenedFile.reason(writeFailure: EROFS, readFailure: ENOENT) == EROFS)
        #expect(Journal.OpenedFile.reason(writeFailure: EACCES, readFailure: EACCES) == EACCES)
        #expect(Journal.OpenedFile.reason(writeFailure: 0, readFailure: ENOENT) == ENOENT)
        #expect(Journal.OpenedFile.reason(writeFailure: ELOOP, readFailure: 0) == ELOOP)
        let folderReadable: (String) -> Int32 = { $0.hasSuffix("-prefs") ? ENOENT : 0 }
        #expect(
            JournalError.isProtectedData(
                openFailure: Journal.OpenedFile.reason(writeFailure: EPERM, readFailure: ENOENT),
                path: "/a/p.sqlite-prefs", platformProtectsFiles: true, lookUp: folderReadable))
    }

    /// A sandbox refusal is not locked data.
    ///
    /// `EPERM` from the sandbox (an App Group the app is not entitled to) comes with the
    /// metadata refused too, of the file and of its folder. A file not made yet in
    /// a folder that can be looked at is locked data (it cannot be made before the first unlock).
    @Test func aSandboxRefusalIsNotLockedData() {
        let sandboxed: (String) -> Int32 = { _ in EPERM }
        #expect(
            !JournalError.isProtectedData(
                openFailure: EPERM, path: "/group/p", platformProtectsFiles: true, lookUp: sandboxed))
        let notYetMade: (String) -> Int32 = { $0 == "/a" ? 0 : ENOENT }
        #expect(
            JournalError.isProtectedData(
                openFailure: EPERM, path: "/a/p", platformProtectsFiles: true, lookUp: notYetMade))
        let nowhere: (String) -> Int32 = { _ in ENOENT }
        #expect(
            !JournalError.isProtectedData(
                openFailure: EPERM, path: "/a/p", platformProtectsFiles: true, lookUp: nowhere))
        // The real look-up: a file that exists can be looked at, one that does not cannot.
        let path = TestFiles.uniquePath("protected")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        #expect(JournalError.metadataFailure(path) == 0)
        #expect(JournalError.metadataFailure(path + ".missing") == ENOENT)
    }

    /// The store's class goes to its own four files, never to the folder it lives in (which an
    /// app may have made stricter).
    @Test func dataProtectionTouchesOnlyTheStoresFiles() throws {
        let path = "/container/Library/prefs.sqlite"
        let files = SQLiteStore.FileProtection.storeFiles(at: path)
        #expect(files == [path, path + "-wal", path + "-shm", path + "-prefs", path + ".sync-link"])
        #expect(!files.contains("/container/Library"))
        // Every file a store leaves beside its database is in the list.
        let store = try SQLiteStore(path: TestFiles.uniquePath("protected-files"))
        try store.setValue(.integer(1), forKey: "k")
        let folder = (store.path as NSString).deletingLastPathComponent
        let name = (store.path as NSString).lastPathComponent
        let made = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(name) }
            .map { folder + "/" + $0 }
        #expect(Set(made).isSubset(of: SQLiteStore.FileProtection.storeFiles(at: store.path)), "\(made)")
    }

    /// A synced store's link lease is one of the store's files: it takes the store's class as
    /// it is made (made with its folder's, a folder of class `complete` kept it out while the
    /// device was locked, and no process synced).
    @Test func theSyncLinkTakesTheStoresProtection() throws {
        let path = TestFiles.uniquePath("protected-link")
        let protected = Locked<[String]>([])
        var options = SQLiteStore.Options()
        options.faults.protectFiles = { path in
            let present = SQLiteStore.FileProtection.storeFiles(at: path).filter {
                FileManager.default.fileExists(atPath: $0)
            }
            protected.withLock { $0 = present }
        }
        let local = try SQLiteStore(path: path, options: options)
        #expect(!protected.withLock { $0 }.contains(path + ".sync-link"))
        let synced = try SyncedStore(
            local: local, remote: MemoryRemote(MemorySyncServer()), diagnostics: IssueRecorder().diagnostics)
        #expect(protected.withLock { $0 }.contains(path + ".sync-link"), "\(protected.withLock { $0 })")
        withExtendedLifetime(synced) {}
    }

    /// SQLite's `-wal` and `-shm` outlive the connection the store closes between uses: made
    /// anew each time, they took their folder's protection class (a folder of class `complete`
    /// refuses a new file while the device is locked, and every move and catch-up failed), not
    /// the store's, given once.
    @Test func sqlitesJournalFilesOutliveEachConnection() throws {
        let path = TestFiles.uniquePath("kept-wal")
        func inode(_ file: String) -> UInt64? {
            var info = stat()
            return stat(file, &info) == 0 ? UInt64(info.st_ino) : nil
        }
        // Kept where there is data protection; forced here, so Linux runs the same mechanism.
        var options = SQLiteStore.Options()
        options.faults.keepsJournalFiles = true
        let store = try SQLiteStore(path: path, options: options)
        try store.setValue(.integer(1), forKey: "k")
        try store.flush()  // a connection opened for the move, then closed
        let wal = try #require(inode(path + "-wal"), "-wal was deleted as the connection closed")
        let shm = try #require(inode(path + "-shm"), "-shm was deleted as the connection closed")
        for round in 0..<3 {
            try store.setValue(.integer(Int64(round)), forKey: "k")
            try store.flush()
            #expect(inode(path + "-wal") == wal, "-wal made anew")
            #expect(inode(path + "-shm") == shm, "-shm made anew")
        }
        #expect(try SQLiteStore(path: path).value(forKey: "k") == .integer(2))
    }

    /// A background checkpoint whose expiring activity expires (the system suspending the app)
    /// before its commit is abandoned cleanly: nothing reaches SQLite, nothing is lost, no lock is
    /// kept, and the next checkpoint moves everything.
    @Test func aCheckpointCutShortBySuspensionLosesNothing() async throws {
        let path = TestFiles.uniquePath("expiring")
        var options = SQLiteStore.Options()
        options.faults.expireAtCheckpointStep = .beforeCommit
        let reached = Locked<[StoreEngine.CheckpointStep]>([])
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
        let first = try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        #expect(first == SQLiteStore.CopyReport(copied: [], keptExisting: [], alreadyCopied: false))
        defaults.set("Zhuo", forKey: "name")
        #expect(defaults.synchronize())
        let second = try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        #expect(second.copied == ["name"])
        #expect(store.value(forKey: "name") == .string("Zhuo"))
        #expect(try store.copyValues(fromUserDefaultsDomain: suite, using: defaults).alreadyCopied)
    }

    /// A suite's key descriptions, kept in the suite itself so its App Group sees them, are not
    /// values: moving the suite into SQLite takes its values and leaves them.
    @Test func movingInASuiteLeavesItsKeyDescriptions() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        let prefs = Preferences(store: UserDefaultsStore(defaults, domain: suite))
        try prefs.publish([Preferences.Key<Int>("volume", default: 1, help: "Playback volume")])
        defaults.set(3, forKey: "volume")
        #expect(defaults.synchronize())
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        let report = try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        #expect(report.copied == ["volume"])
        #expect(store.value(forKey: "volume") == .integer(3))
        #expect(Set(store.snapshot().keys.map(\.name)) == ["volume"])
    }

    /// Item 9: a suite Foundation refuses is a clear error, not the standard defaults in disguise.
    @Test func aSuiteFoundationRefusesIsAnError() throws {
        let name = "NSGlobalDomain"
        if UserDefaults(suiteName: name) == nil {
            #expect(throws: StoreError.userDefaults(.suiteRefused, suite: name)) {
                try UserDefaultsStore(suiteName: name)
            }
            // Moving such a domain in throws the same typed error, not a SQLite error's text.
            let store = try SQLiteStore(path: TestFiles.uniquePath())
            #expect(throws: StoreError.userDefaults(.suiteRefused, suite: name)) {
                try store.copyValues(fromUserDefaultsDomain: name)
            }
        } else {
            // Foundation on Linux opens it; the store then is that suite, never `.standard`.
            #expect(try UserDefaultsStore(suiteName: name).domain == name)
        }
    }
}
