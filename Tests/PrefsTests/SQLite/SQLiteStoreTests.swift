import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

/// Runs `PRAGMA integrity_check` on a file with a connection of its own.
func integrityCheck(_ path: String) throws -> String {
    let connection = try SQLiteConnection(path: path)
    return try connection.text("PRAGMA integrity_check") ?? "<no answer>"
}

@Suite struct SQLiteStoreTests {
    @Test func createsFoldersAndAnOwnerOnlyFile() throws {
        let path = TestFiles.folder.appendingPathComponent("nested-\(UUID())/deeper/prefs.sqlite").path
        let store = try SQLiteStore(path: path)
        try store.setValue(.string("x"), forKey: "k")
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(try SQLiteConnection(path: path).text("PRAGMA journal_mode") == "wal")
        #expect(try SQLiteConnection(path: path).integer("PRAGMA user_version") == StoreEngine.schemaVersion)
    }

    @Test func valuesSurviveReopening() throws {
        let path = TestFiles.uniquePath()
        let values: [String: PropertyListValue] = [
            "date": .date(Date(timeIntervalSince1970: 1_700_000_000.123_456_7)),
            "nan": .double(.nan), "text": .string("a\u{0}b 🌍"), "key\u{0}with nul": .bool(true),
            "nested": .dictionary(["a": .array([.integer(.min), .data(Data([0, 255]))])]),
        ]
        do {
            let store = try SQLiteStore(path: path)
            for (key, value) in values { try store.setValue(value, forKey: key) }
            try store.setValue(nil, forKey: "text")
        }
        let reopened = try SQLiteStore(path: path).snapshot()
        #expect(reopened.count == values.count - 1)
        #expect(reopened["text"] == nil)
        #expect(reopened["date"] == values["date"])
        #expect(reopened["nested"] == values["nested"])
        #expect(reopened["key\u{0}with nul"] == .bool(true))
        guard case .double(let nan) = reopened["nan"] else { throw TestFailure("nan lost") }
        #expect(nan.isNaN)
    }

    @Test func twoStoresOnOneFileSeeEachOthersWrites() async throws {
        let path = TestFiles.uniquePath()
        let first = IssueRecorder().preferences(try SQLiteStore(path: path))
        let second = IssueRecorder().preferences(try SQLiteStore(path: path))
        first[.volume] = 0.9
        #expect(await eventually { second[.volume] == 0.9 })
        second.reset(.volume)
        #expect(await eventually { !first.hasValue(for: .volume) })
        try second.update { p in p[.launchCount] = 41 }
        try first.update { p in p[.launchCount] += 1 }  // reads the other's commit inside its transaction
        #expect(first[.launchCount] == 42)
        #expect(await eventually { second[.launchCount] == 42 })
    }

    /// A write first applies what other stores of the file wrote (reading their records in place,
    /// holding the journal's lock): its observers hear each of those records once, whole and in
    /// order, before its own write, whichever of the write and the store's watch applies them.
    @Test func observersHearTheRecordsAWriteCatchesUpWith() async throws {
        let path = TestFiles.uniquePath()
        let observed = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        let heard = Locked<[StoreChange]>([])
        let observation = observed.observe { change in heard.withLock { $0.append(change) } }
        var expected: [StoreChange] = []
        for round in 0..<40 {
            let mine = StoreKey("mine.\(round)")
            let theirs = StoreKey("theirs.\(round)")
            if round % 2 == 0 {
                try other.setValue(.integer(Int64(round)), forKey: theirs.name)
                expected.append(StoreChange(values: [theirs: .set(.integer(Int64(round)))]))
            } else {
                // A record of two entries, one of them a removal.
                let earlier = StoreKey("theirs.\(round - 1)")
                try other.transaction { t in
                    t[theirs.name] = .string("odd \(round)")
                    t[earlier.name] = nil
                }
                expected.append(
                    StoreChange(values: [theirs: .set(.string("odd \(round)")), earlier: .removed]))
            }
            try observed.setValue(.bool(true), forKey: mine.name)
            expected.append(StoreChange(values: [mine: .set(.bool(true))]))
        }
        #expect(await eventually { heard.withLock { $0.count } >= expected.count })
        #expect(heard.withLock { $0 } == expected)
        #expect(observed.value(forKey: "theirs.38") == nil)
        #expect(observed.value(forKey: "theirs.39") == .string("odd 39"))
        withExtendedLifetime(observation) {}
    }

    /// A store nobody observes leaves other stores' writes in the journal until it reads or
    /// writes: its watch looks once per interval, not whenever it is woken (another store closing
    /// wakes every watcher) or finds the journal moving (looking again and again while others
    /// wrote took processor time and the cache's lock from them); a first observer makes it look.
    @Test func aStoreNobodyObservesIsNotCaughtUpInTheBackground() async throws {
        let path = TestFiles.uniquePath()
        // Its one timed look an hour away: on a loaded machine this test has taken over a minute,
        // and the default interval's looks (10 s) would be counted.
        let quiet = try SQLiteStore(path: path, options: .init(refreshInterval: .seconds(3_600)))
        let writer = try SQLiteStore(path: path)
        var closing: SQLiteStore? = try SQLiteStore(path: path)
        // An observed store of the same file: its looks mark the wake-ups the quiet one was sent.
        let marker = try SQLiteStore(path: path)
        let markerObservation = marker.observe { _ in }
        func looks() -> UInt64 { quiet.core.watchLooks.load() }
        // The watch's one look when it starts (which may be late on a busy machine).
        #expect(await eventually { looks() == 1 })
        let before = quiet.core.cache.position
        let markerBefore = marker.core.watchLooks.load()
        for index in 0..<200 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index % 7)") }
        closing = nil  // a store closing wakes every watcher of the file
        #expect(closing == nil)
        // The marker has looked after the writes and the close: the wake-ups were delivered.
        #expect(await eventually { marker.value(forKey: "k3") == .integer(199) })
        #expect(await eventually { marker.core.watchLooks.load() > markerBefore })
        #expect(looks() == 1)
        #expect(quiet.core.cache.position == before)
        let heard = Locked(0)
        let observation = quiet.observe { _ in heard.withLock { $0 += 1 } }
        #expect(await eventually { quiet.core.cache.position > before })
        try writer.setValue(.integer(-1), forKey: "k0")
        #expect(await eventually { heard.withLock { $0 } > 0 })
        #expect(quiet.value(forKey: "k0") == .integer(-1))
        withExtendedLifetime((observation, markerObservation)) {}
    }

    /// `flush()` moves the journal into SQLite: the SQLite file alone then holds every write.
    @Test func flushLeavesEveryWriteInTheSQLiteFileItself() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        for index in 0..<100 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
        try store.setValue(nil, forKey: "k7")
        try store.flush()
        let connection = try SQLiteConnection(path: path, readOnly: true)
        #expect(try connection.integer("SELECT count(*) FROM prefs_entries WHERE value IS NOT NULL") == 99)
        #expect(
            try connection.integer("SELECT count(*) FROM prefs_entries WHERE key = 'k7' AND value IS NULL")
                == 1)
    }

    /// A file of the first release (schema version 1: no journal, entries WITHOUT ROWID) opens
    /// with its values, a removal's row stays a removal, and it is upgraded to version 2.
    @Test func aVersionOneFileIsUpgradedWithItsValues() throws {
        let path = TestFiles.uniquePath()
        do {
            let old = try SQLiteConnection(path: path)
            try old.execute(
                """
                CREATE TABLE prefs_entries(key TEXT PRIMARY KEY NOT NULL, value BLOB, seq INTEGER NOT NULL) WITHOUT ROWID;
                CREATE INDEX prefs_entries_seq ON prefs_entries(seq);
                CREATE TABLE prefs_meta(name TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
                PRAGMA user_version = 1;
                """)
            try old.run(
                "INSERT INTO prefs_entries(key, value, seq) VALUES ('name', ?1, 7), ('gone', NULL, 8)",
                [.blob(PropertyListValue.string("kept").storedEncoding())])
        }
        let store = try SQLiteStore(path: path)
        #expect(store.snapshot() == ["name": .string("kept")])
        try store.setValue(.integer(1), forKey: "new")
        try store.flush()
        let connection = try SQLiteConnection(path: path, readOnly: true)
        #expect(try connection.integer("PRAGMA user_version") == StoreEngine.schemaVersion)
        #expect(try connection.integer("SELECT seq FROM prefs_entries WHERE key = 'new'") ?? 0 > 8)
    }

    @Test func garbageFilesThrowATypedErrorNamingTheFile() throws {
        let path = TestFiles.uniquePath("garbage")
        let garbage = Data((0..<8192).map { (index: Int) in UInt8(truncatingIfNeeded: index &* 7 &+ 3) })
        try garbage.write(to: URL(fileURLWithPath: path))
        #expect {
            try SQLiteStore(path: path)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.kind == .notADatabase && error.storeDescription == path
                && error.description.contains(path)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage, "the file is left untouched")
    }

    @Test func truncatedFilesThrowAndAreNeverSilentlyReset() throws {
        let path = TestFiles.uniquePath("truncated")
        do {
            let store = try SQLiteStore(path: path)
            // Enough data to span many pages, then a checkpoint so it all lives in the main file.
            try store.transaction { t in
                for index in 0..<2_000 { t["key\(index)"] = .string(String(repeating: "v", count: 200)) }
            }
        }
        let connection = try SQLiteConnection(path: path)
        connection.setBusyTimeout(milliseconds: 10_000)
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: path))

        #expect {
            try SQLiteStore(path: path)
        } throws: { error in
            (error as? StoreError)?.kind == .corrupt
        }
    }

    @Test func anEmptyFileIsAnEmptyStore() throws {
        let path = TestFiles.uniquePath("empty")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let store = try SQLiteStore(path: path)
        #expect(store.keys().isEmpty)
        try store.setValue(.bool(true), forKey: "works")
        #expect(try SQLiteStore(path: path).value(forKey: "works") == .bool(true))
    }

    @Test func recreateOnCorruptionMovesTheFileAsideAndReports() throws {
        let path = TestFiles.uniquePath("recreate")
        let garbage = Data("this is not a database, just some text that is long enough".utf8)
        try garbage.write(to: URL(fileURLWithPath: path))
        let store = try SQLiteStore(path: path, options: .init(recreateOnCorruption: true))
        let recovery = try #require(store.recovery)
        #expect(recovery.error.kind == .notADatabase)
        #expect(recovery.movedTo.hasPrefix(path + ".corrupt-"))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: recovery.movedTo)) == garbage, "the bad file is kept")
        #expect(store.keys().isEmpty)
        try store.setValue(.integer(1), forKey: "fresh")
        #expect(try SQLiteStore(path: path).value(forKey: "fresh") == .integer(1))
    }

    @Test func aNewerSchemaOrAnotherProgramsDatabaseIsRefused() throws {
        let newer = TestFiles.uniquePath("newer")
        _ = try SQLiteStore(path: newer)
        try SQLiteConnection(path: newer).execute("PRAGMA user_version = 99")
        #expect { try SQLiteStore(path: newer) } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.kind == .newerSchema && error.message.contains("schema version 99")
        }

        let foreign = TestFiles.uniquePath("foreign")
        try SQLiteConnection(path: foreign).execute("CREATE TABLE invoices(id INTEGER)")
        #expect { try SQLiteStore(path: foreign, options: .init(recreateOnCorruption: true)) } throws: {
            error in
            (error as? StoreError)?.description.contains("another program") == true
        }
        #expect(FileManager.default.fileExists(atPath: foreign), "another program's file is never moved")
    }

    @Test func anUndecodableRowIsIgnoredNotFatal() throws {
        let path = TestFiles.uniquePath("badrow")
        let store = try SQLiteStore(path: path)
        try store.setValue(.string("good"), forKey: "good")
        try SQLiteConnection(path: path).execute(
            "INSERT INTO prefs_entries(key, value, seq) VALUES ('bad', x'FF00', 99)")
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.snapshot() == ["good": .string("good")])
    }

    #if os(macOS) || os(Linux)
        @Test func aReadOnlyFileThrowsOnWriteAndKeepsItsData() throws {
            let folder = try ReadOnlyFolder()
            defer { folder.remove() }
            let path = folder.url.appendingPathComponent("prefs.sqlite").path
            do {
                let store = try SQLiteStore(path: path)
                try store.setValue(.string("kept"), forKey: "name")
            }
            try folder.makeReadOnly()
            let store = try SQLiteStore(path: path)
            #expect(store.value(forKey: "name") == .string("kept"))
            #expect {
                try store.setValue(.string("lost"), forKey: "name")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.kind == .readOnly || error.kind == .cannotOpen
            }
            #expect(store.value(forKey: "name") == .string("kept"))
            try folder.makeWritable()
            #expect(try SQLiteStore(path: path).value(forKey: "name") == .string("kept"))
        }
    #endif

    /// A write moves the journal into SQLite itself well before the journal is full, on every
    /// platform's reservation (watchOS reserves 32 MiB, less than the 64 MiB limit elsewhere).
    @Test(arguments: [32 << 20, 64 << 20, 256 << 20, 1 << 30])
    func theInlineCheckpointComesBeforeTheJournalIsFull(reservation: Int) {
        let limit = SQLiteStoreCore.journalLimit(reservation: reservation)
        #expect(limit <= reservation / 4)
        #expect(limit > SQLiteStoreCore.checkpointThreshold)
    }

    /// Each time writes carry the journal past its threshold, a checkpoint moves it into SQLite
    /// in the background, with no flush: the first leaves room for the next to be queued.
    @Test func aJournalPastItsThresholdIsMovedInTheBackgroundEachTime() async throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath("background-moves"))
        let payload = String(repeating: "x", count: 4_000)
        var moved: UInt64 = 0
        for round in 0..<3 {
            // 300 values of 4 KB: past the 1 MiB at which a write queues a background checkpoint.
            for index in 0..<300 {
                try store.setValue(.string("\(round).\(index)\(payload)"), forKey: "k\(index)")
            }
            let before = moved
            #expect(
                await eventually { store.checkpointCost.records > before },
                "round \(round): nothing moved in the background")
            #expect(await eventually { store.core.checkpointer.queued.load() == 0 })
            moved = store.checkpointCost.records
        }
        #expect(store.value(forKey: "k299") == .string("2.299\(payload)"))
    }

    #if os(macOS) || os(Linux)
        @Test(
            .enabled(
                if: getuid() == 0,
                "a full disk is made with a small tmpfs, which needs root (CI runs as root)"))
        func aFullDiskThrowsOnWriteAndKeepsWhatWasStored() throws {
            let folder = try ReadOnlyFolder(sizeLimit: "256k")
            defer { folder.remove() }
            let store = try SQLiteStore(path: folder.url.appendingPathComponent("prefs.sqlite").path)
            try store.setValue(.string("kept"), forKey: "name")
            let big = PropertyListValue.data(Data(repeating: 7, count: 64 * 1024))
            var failure: (any Error)?
            for index in 0..<64 {
                do { try store.setValue(big, forKey: "big\(index)") } catch {
                    failure = error
                    break
                }
            }
            let error = try #require(failure as? StoreError, "a full disk must throw")
            #expect(error.kind == .diskFull, "\(error)")
            #expect(store.value(forKey: "name") == .string("kept"))
            // Room for the checking connection's own `-shm` (the store holds no connection open
            // between calls, so a new one needs to make its index afresh).
            try folder.resize("4m")
            #expect(try integrityCheck(store.path) == "ok")
        }

        /// With the disk full to the last byte, every way a write can fail says `.diskFull` (never
        /// SQLite's "disk I/O error"), and a new store on that disk still opens and reads.
        @Test(
            .enabled(
                if: getuid() == 0,
                "a full disk is made with a small tmpfs, which needs root (CI runs as root)"))
        func everyWriteOnAFullDiskSaysSoAndTheStoreStillOpens() throws {
            let folder = try ReadOnlyFolder(sizeLimit: "512k")
            defer { folder.remove() }
            let path = folder.url.appendingPathComponent("prefs.sqlite").path
            var kinds: [StoreError.Kind] = []
            do {
                let store = try SQLiteStore(path: path)
                try store.setValue(.string("kept"), forKey: "name")
                try store.flush()
                // Fill every byte left.
                let filler = open(folder.url.appendingPathComponent("filler").path, O_CREAT | O_WRONLY, 0o600)
                let block = [UInt8](repeating: 1, count: 4096)
                while write(filler, block, block.count) > 0 {}
                while write(filler, block, 1) > 0 {}
                close(filler)
                let big = PropertyListValue.data(Data(repeating: 7, count: 200 * 1024))
                let attempts: [() throws -> Void] = [
                    { try store.setValue(big, forKey: "big") },
                    {
                        for index in 0..<2_000 {
                            try store.setValue(.integer(Int64(index)), forKey: "k\(index)")
                        }
                    },
                    { try store.flush() },
                ]
                for attempt in attempts {
                    do { try attempt() } catch let error as StoreError { kinds.append(error.kind) }
                }
                #expect(store.value(forKey: "name") == .string("kept"))
            }
            #expect(!kinds.isEmpty, "nothing failed on a full disk")
            #expect(kinds.allSatisfy { $0 == .diskFull }, "\(kinds)")
            let reopened = try SQLiteStore(path: path)
            #expect(reopened.value(forKey: "name") == .string("kept"))
        }
    #endif
}

#if os(macOS) || os(Linux)
    /// A folder that can be made read-only (or that lives on a small file system), for write-failure tests.
    ///
    /// As root, permissions do not stop writes, so it mounts a small tmpfs and remounts it read-only; otherwise
    /// it uses permissions.
    struct ReadOnlyFolder {
        let url: URL
        let isMount: Bool

        init(sizeLimit: String? = nil) throws {
            url = TestFiles.folder.appendingPathComponent("ro-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            let isRoot = getuid() == 0
            if isRoot || sizeLimit != nil {
                let mount = try Self.shell(
                    "mount", "-t", "tmpfs", "-o", "size=\(sizeLimit ?? "1m")", "tmpfs", url.path)
                guard mount == 0 else {
                    throw TestFailure(
                        "cannot mount a tmpfs at \(url.path) (needs root and CAP_SYS_ADMIN); this test needs one"
                    )
                }
                isMount = true
            } else {
                isMount = false
            }
        }

        /// Gives the tmpfs another size (a full disk gets room again).
        func resize(_ size: String) throws {
            guard isMount, try Self.shell("mount", "-o", "remount,size=\(size)", url.path) == 0 else {
                throw TestFailure("cannot resize the tmpfs at \(url.path)")
            }
        }

        func makeReadOnly() throws {
            if isMount {
                // The kernel refuses while any file on it is open for writing; a process another
                // test starts at that moment can hold a descriptor briefly (seen once in CI), so
                // a refusal is retried for up to 2 s and then reported with mount's own words.
                var result = try Self.run("mount", "-o", "remount,ro", url.path)
                for _ in 0..<40 where result.status != 0 {
                    usleep(50_000)
                    result = try Self.run("mount", "-o", "remount,ro", url.path)
                }
                guard result.status == 0 else { throw TestFailure("remount ro failed: \(result.stderr)") }
            } else {
                for item in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                    try FileManager.default.setAttributes(
                        [.posixPermissions: 0o400], ofItemAtPath: url.appendingPathComponent(item).path)
                }
                try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: url.path)
            }
        }

        func makeWritable() throws {
            if isMount {
                guard try Self.shell("mount", "-o", "remount,rw", url.path) == 0 else {
                    throw TestFailure("remount rw failed")
                }
            } else {
                try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: url.path)
                for item in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                    try FileManager.default.setAttributes(
                        [.posixPermissions: 0o600], ofItemAtPath: url.appendingPathComponent(item).path)
                }
            }
        }

        func remove() {
            if isMount { _ = try? Self.shell("umount", "-l", url.path) }
            try? FileManager.default.removeItem(at: url)
        }

        /// Runs `mount` or `umount` (`/bin`, where Debian's `mount` package has them) to its end.
        static func shell(_ arguments: String...) throws -> Int32 {
            try runMount(arguments).status
        }

        static func run(_ arguments: String...) throws -> ChildOutput {
            try runMount(arguments)
        }

        private static func runMount(_ arguments: [String]) throws -> ChildOutput {
            try ChildProcess.run(URL(fileURLWithPath: "/bin/\(arguments[0])"), Array(arguments.dropFirst()))
        }
    }
#endif
