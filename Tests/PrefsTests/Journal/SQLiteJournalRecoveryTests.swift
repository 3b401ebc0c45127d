#if os(macOS) || os(Linux)
    import CPrefsShared
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsEngine
    import PrefsSupport

    /// What a power loss, another process or a hostile file can leave at the journal, and how
    /// the store recovers: every whole record that SQLite lacks is kept, nothing cut comes back,
    /// nothing is followed or wiped that the store did not make.
    @Suite struct SQLiteJournalRecoveryTests {
        private typealias Layout = Journal.Layout

        /// A power loss after a move's copy reached the disk but before its header did, with the
        /// source overwritten since: the note's checksum says the copy is whole, so it is kept
        /// (copying the source again would have written garbage over it).
        @Test func aMoveWhoseCopyIsWholeIsFinishedWithoutCopyingAgain() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            try JournalFiles.editJournal(path) { journal in
                let end = JournalFiles.recordsEnd(journal)
                let count = end - Layout.headerSize
                let source = (end + 4095) / 4096 * 4096
                let checksum = journal.withUnsafeBytes {
                    prefs_crc32c($0.baseAddress! + Layout.headerSize, count)
                }
                journal.replaceSubrange(source..<source + count, with: [UInt8](repeating: 0xAB, count: count))
                JournalFiles.put(UInt64(source), at: Layout.moveFromOffset, in: &journal)
                JournalFiles.put(UInt64(count), at: Layout.moveLengthOffset, in: &journal)
                JournalFiles.put(UInt64(0), at: Layout.moveBaseOffset, in: &journal)
                JournalFiles.put(checksum, at: Layout.moveChecksumOffset, in: &journal)
                JournalFiles.put(UInt64(1), at: Layout.generationOffset, in: &journal)
            }
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 20, "\(stderr)")
            #expect(values["k19"] == "integer 19")
            #expect(stderr.contains("had copied"), "\(stderr)")
        }

        /// A move interrupted where neither the copy nor the source is whole any more: the note is
        /// dropped and the records are checked one by one (the whole ones before the damage stay).
        @Test func aMoveWithNeitherCopyWholeFallsBackToTheWalk() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            try JournalFiles.editJournal(path) { journal in
                let offsets = JournalFiles.recordOffsets(journal)
                let end = JournalFiles.recordsEnd(journal)
                journal[offsets[10] + 21] ^= 0xFF
                JournalFiles.put(UInt64((end + 4095) / 4096 * 4096), at: Layout.moveFromOffset, in: &journal)
                JournalFiles.put(UInt64(end - Layout.headerSize), at: Layout.moveLengthOffset, in: &journal)
                JournalFiles.put(UInt32(12345), at: Layout.moveChecksumOffset, in: &journal)
            }
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 10, "\(values.keys.sorted()) \(stderr)")
            #expect(stderr.contains("neither copy is whole"), "\(stderr)")
        }

        /// Cut records never come back.
        ///
        /// After a power loss left the header's number stale, the first opening cuts at a damaged
        /// record; a later write of the same length lands where the cut record was, with its
        /// number. The cut records after it never come back.
        @Test func cutRecordsNeverComeBack() throws {
            let path = try JournalFiles.crashedStore(records: 50)
            try JournalFiles.editJournal(path) { journal in
                let offsets = JournalFiles.recordOffsets(journal)
                journal[offsets[30] + 21] ^= 0xFF  // k30's record
                JournalFiles.put(UInt64(10), at: Layout.sequenceOffset, in: &journal)
                JournalFiles.put(UInt64(offsets[10]), at: Layout.writeOffsetOffset, in: &journal)
            }
            let store = try SQLiteStore(path: path)  // the first opening cuts
            #expect(store.keys().count == 30)
            // The same key length and value as the cut record: the same record length.
            try store.setValue(.integer(30), forKey: "x30")
            // Read as a crash would leave it (no checkpoint empties the journal first).
            let copy = try JournalFiles.copyOfLiveStore(path)
            withExtendedLifetime(store) {}
            let (values, stderr) = try JournalFiles.dump(copy)
            #expect(values["x30"] == "integer 30", "\(stderr)")
            #expect(values.count == 31, "cut records came back: \(values.keys.sorted())")
            #expect(values["k31"] == nil)
        }

        /// A base above SQLite's checkpointed mark (damage, or a lie) would have made every record
        /// up to it look dropped; each of them passes its checksum and SQLite lacks it, so all are
        /// kept, and the lie is reported.
        @Test(arguments: [1, 25, 49])
        func aWrongBaseDropsNoValidRecord(base: Int) throws {
            let path = try JournalFiles.crashedStore(records: 50)
            try JournalFiles.editJournal(path) { journal in
                JournalFiles.put(UInt64(base), at: Layout.baseOffset, in: &journal)
            }
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 50, "\(stderr)")
            #expect(!stderr.contains("in neither"), "\(stderr)")
            #expect(stderr.contains("are in SQLite, which holds them up to"), "\(stderr)")
        }

        /// Another process lowers the header's write offset under a store that is moving its
        /// journal into SQLite: the move is abandoned and repaired, not a trap.
        @Test func aWriteOffsetLoweredDuringACheckpointIsNoTrap() throws {
            let path = TestFiles.uniquePath()
            let other = try SQLiteStore(path: path)
            var options = SQLiteStore.Options()
            options.faults.atCheckpointStep = { step in
                guard step == .afterCommit, let journal = other.core.journal else { return }
                try? other.setValue(.integer(1), forKey: "during")  // a record to move
                journal.set(Layout.writeOffsetOffset, Layout.headerSize)
            }
            let store = try SQLiteStore(path: path, options: options)
            for index in 0..<100 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            try store.flush()
            #expect(store.value(forKey: "k99") == .integer(99))
        }

        /// When only the database is deleted (a user "resetting" an app), its leftover journal is
        /// not replayed into the new, empty database at that path: it belongs to another
        /// database, and is moved aside whole.
        @Test func aDeletedDatabasesJournalIsNotReplayedIntoANewOne() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let store = try SQLiteStore(path: path)
            #expect(store.keys().isEmpty, "the deleted store's values came back: \(store.keys().sorted())")
            let folder = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent + "-prefs.other-database-"
            let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
                $0.hasPrefix(name)
            }
            #expect(aside.count == 1)
            #expect(aside.first.map { FileManager.default.contents(atPath: folder + "/" + $0) } == journal)
        }

        /// A journal an earlier release wrote carries no database identity: it is replayed, and
        /// adopted.
        @Test func aJournalWithoutADatabaseIdentityIsAdopted() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            try JournalFiles.editJournal(path) {
                JournalFiles.put(UInt64(0), at: Layout.databaseIDOffset, in: &$0)
            }
            #expect(try JournalFiles.dump(path).values.count == 20)
            let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let owner = journal[Layout.databaseIDOffset..<Layout.databaseIDOffset + 8].withUnsafeBytes {
                $0.loadUnaligned(as: UInt64.self)
            }
            #expect(owner != 0)
        }

        /// A writer stopped (not killed) while it holds the journal's lock keeps nobody from
        /// opening the store to read.
        ///
        /// Opening waits for the lock only briefly (200 ms is the
        /// promise; 2 s leaves room for a loaded machine, against the 30 s busy timeout). CI runs
        /// this with `PREFS_JOURNAL_LOCK=flock` too, where the opening lock is the journal's own,
        /// as on Apple platforms.
        @Test func aStoppedLockHolderDoesNotKeepOthersFromOpeningToRead() async throws {
            let path = TestFiles.uniquePath()
            let holder = try Helper.start(["sqlite-hold-lock", path])
            defer {
                holder.killIfRunning()
                _ = holder.finish()
            }
            #expect(await eventually(within: 30) { holder.currentStdout.contains("holding") })
            let started = ContinuousClock.now
            let reader = try SQLiteStore(path: path, options: .init(lockTimeout: .seconds(30)))
            #expect(reader.value(forKey: "held") == .integer(1))
            #expect(ContinuousClock.now - started < .seconds(2), "opening waited for the stopped holder")
            // The first write waits for the holder like any write (here: the busy timeout).
            let writer = try SQLiteStore(path: path, options: .init(lockTimeout: .milliseconds(300)))
            #expect(throws: StoreError.self) { try writer.setValue(.integer(2), forKey: "held") }
        }

        /// A read never spins without end: with the generation left odd (a holder stopped while
        /// moving records) and a record announced, it gives up on the journal after a bounded
        /// wait and answers from SQLite and the cache.
        @Test func aReadWithTheGenerationLeftOddDoesNotSpinForever() throws {
            let path = TestFiles.uniquePath()
            let store = try SQLiteStore(path: path)
            try store.setValue(.integer(5), forKey: "five")
            try store.flush()
            let journal = try #require(store.core.journal)
            journal.set(Layout.generationOffset, journal.generation | 1)
            journal.set(Layout.sequenceOffset, journal.sequence + 1)
            let reader = try SQLiteStore(path: path, options: .init(lockTimeout: .milliseconds(100)))
            journal.set(Layout.sequenceOffset, journal.sequence + 1)
            #expect(reader.value(forKey: "five") == .integer(5))
        }

        /// A move-in is one transaction with its mark.
        ///
        /// Killed before the commit it leaves neither
        /// the values nor the mark (the next call moves everything), killed after it both (the
        /// next call does nothing). It used to write the values, then the mark, and a kill between
        /// them made the next call move them in again.
        @Test(arguments: [StoreEngine.CheckpointStep.beforeCommit, .afterCommit])
        func aMoveInKilledAtAnyStepIsAllOrNothing(step: StoreEngine.CheckpointStep) throws {
            let path = TestFiles.uniquePath()
            let suite = TestDefaults.uniqueSuiteName()
            let output = try Helper.run(["sqlite-killed-move-in", path, suite, step.rawValue])
            #expect(output.status == SIGKILL, "\(output.stderr)")
            let store = try SQLiteStore(path: path)
            #expect(store.value(forKey: "d0") == .integer(-1))
            let moved = (1..<100).filter { store.value(forKey: "d\($0)") == .integer(Int64($0)) }.count
            let defaults = try #require(UserDefaults(suiteName: suite))
            let again = try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
            if step == .beforeCommit {
                #expect(moved == 0)
                #expect(again.copied.count == 99 && again.keptExisting == ["d0"], "\(again)")
            } else {
                #expect(moved == 99)
                #expect(again.alreadyCopied)
            }
            #expect(store.value(forKey: "d99") == .integer(99))
        }

        /// A journal cut short under a store's mapping is no crash.
        ///
        /// Another process cutting the journal short while a store has it mapped used to kill the
        /// store's process with SIGBUS at its next touch of a page past the new end. The process
        /// lives: writes through that mapping throw `.corrupt`, reads answer from the cache, and a
        /// store opened again works.
        @Test func aJournalCutShortUnderTheMappingIsNoCrash() throws {
            let path = TestFiles.uniquePath()
            let store = try SQLiteStore(path: path)
            for index in 0..<20 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            #expect(truncate(path + "-prefs", 0) == 0)
            #expect {
                try store.setValue(.integer(99), forKey: "after")
            } throws: { error in
                (error as? StoreError)?.kind == .corrupt
            }
            #expect(store.value(forKey: "k19") == .integer(19))
            let reopened = try SQLiteStore(path: path)
            try reopened.setValue(.integer(1), forKey: "again")
            #expect(reopened.value(forKey: "again") == .integer(1))
        }

        /// What the store repairs is said to the store's diagnostics (the app's logging), not
        /// printed by the library.
        @Test func repairsAreReportedToTheStoresDiagnostics() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            try JournalFiles.editJournal(path) { journal in
                journal[JournalFiles.recordOffsets(journal)[10] + 21] ^= 0xFF
            }
            let notices = Locked<[PreferenceIssue]>([])
            var options = SQLiteStore.Options()
            options.diagnostics = PreferenceDiagnostics { issue in notices.withLock { $0.append(issue) } }
            let store = try SQLiteStore(path: path, options: options)
            #expect(store.keys().count == 10)
            let said = notices.withLock { $0 }
            #expect(said.contains { "\($0)".contains("checksum") }, "\(said)")
            #expect(said.allSatisfy { if case .storeNotice = $0.kind { true } else { false } })
        }

        // MARK: - What lies at the journal's path

        /// A FIFO at the journal's path is refused at once (opening used to wait on it forever),
        /// and so is a folder (which used to give a silently read-only store).
        @Test(arguments: ["fifo", "folder"])
        func somethingOtherThanAFileAtTheJournalsPathIsRefused(kind: String) throws {
            let path = TestFiles.uniquePath()
            if kind == "fifo" {
                #expect(mkfifo(path + "-prefs", 0o600) == 0)
            } else {
                try FileManager.default.createDirectory(
                    atPath: path + "-prefs", withIntermediateDirectories: false)
            }
            #expect {
                try SQLiteStore(path: path)
            } throws: { error in
                let error = error as? StoreError
                return error?.kind == .cannotOpen
                    && error?.message.contains("a journal must be a regular file") == true
            }
        }

        /// A symbolic link at the journal's path is refused and its target left exactly as it
        /// was (a target whose first bytes were zero used to be taken for a new journal and wiped).
        @Test func aSymbolicLinkAtTheJournalsPathIsRefusedAndItsTargetKept() throws {
            let path = TestFiles.uniquePath()
            let target = TestFiles.uniquePath("target")
            let content = Data(repeating: 0, count: 8) + Data(repeating: 7, count: 15_000)
            try content.write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: path + "-prefs", withDestinationPath: target)
            #expect {
                try SQLiteStore(path: path)
            } throws: { error in
                (error as? StoreError)?.message.contains("symbolic link") == true
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == content)
        }

        /// A symbolic link at the database's path is refused, never followed.
        @Test func aSymbolicLinkAtTheDatabasesPathIsRefused() throws {
            let path = TestFiles.uniquePath()
            let target = TestFiles.uniquePath("target")
            _ = try SQLiteStore(path: target)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            #expect {
                try SQLiteStore(path: path)
            } throws: { error in
                (error as? StoreError)?.message.contains("symbolic link") == true
            }
        }

        /// Folders are the user's to arrange: a store under folders that are links (as every app
        /// container on an Apple device is, under `/var`, and `~/.config` made by a dotfile
        /// manager) opens, writes, and is read again through another path to the same folder.
        @Test func aStoreUnderLinkedFoldersOpensAndKeepsItsValues() throws {
            let real = ScratchFolder.make("real-home")
            let outer = ScratchFolder.make("outer")
            // Two links on the way: `outer/home` to the real folder, `home/config` inside it.
            try FileManager.default.createDirectory(
                at: real.appendingPathComponent("dotfiles"), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: outer.appendingPathComponent("home").path, withDestinationPath: real.path)
            try FileManager.default.createSymbolicLink(
                atPath: real.appendingPathComponent("config").path, withDestinationPath: "dotfiles")
            let linkedPath = outer.appendingPathComponent("home/config/prefs/app.sqlite").path
            do {
                let store = try SQLiteStore(path: linkedPath)
                try store.setValue(.string("hi"), forKey: "greeting")
                try store.flush()
            }
            let realPath = real.appendingPathComponent("dotfiles/prefs/app.sqlite").path
            #expect(FileManager.default.fileExists(atPath: realPath), "the file is where the links lead")
            #expect(try SQLiteStore(path: realPath).value(forKey: "greeting") == .string("hi"))
            #expect(try SQLiteStore(path: linkedPath).value(forKey: "greeting") == .string("hi"))
        }

        /// Only the folders' links are followed: a link at the store's `-wal` is still refused.
        @Test func aSymbolicLinkAtTheWriteAheadLogIsRefused() throws {
            let path = TestFiles.uniquePath()
            let target = TestFiles.uniquePath("target")
            try Data().write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: path + "-wal", withDestinationPath: target)
            #expect(throws: StoreError.self) { try SQLiteStore(path: path) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: target)).isEmpty, "the target untouched")
        }

        /// A file at the journal's path whose first 8 bytes are zero but which holds more than an
        /// unfinished journal could (another file, or a journal whose header page a power loss
        /// lost) is never truncated: it is moved aside, whole, and the store opens.
        @Test func aFileWithoutAJournalHeaderIsMovedAsideNeverTruncated() throws {
            let path = TestFiles.uniquePath()
            let content = Data(repeating: 0, count: 8) + Data(repeating: 7, count: 15_000)
            try content.write(to: URL(fileURLWithPath: path + "-prefs"))
            let store = try SQLiteStore(path: path)
            try store.setValue(.integer(1), forKey: "after")
            let folder = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent + "-prefs.unreadable-"
            let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
                $0.hasPrefix(name)
            }
            #expect(aside.count == 1)
            #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + aside[0])) == content)
        }

        /// A journal root creates belongs to the database's owner.
        ///
        /// Root opening a user's store whose journal was missing makes the journal the user's (as
        /// SQLite does for `-wal` and `-shm`): the user's own process then writes to it. Runs as
        /// root only (CI); elsewhere it says so.
        @Test func aJournalCreatedByRootBelongsToTheDatabasesOwner() throws {
            guard geteuid() == 0 else {
                print("skipped: aJournalCreatedByRootBelongsToTheDatabasesOwner needs root")
                return
            }
            let folder = TestFiles.folder.appendingPathComponent("owned-\(UUID())").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let path = folder + "/prefs.sqlite"
            let nobody: uid_t = 65534
            do {
                _ = try SQLiteStore(path: path)
            }
            for file in [folder, path] { #expect(chown(file, nobody, nobody) == 0) }
            try? FileManager.default.removeItem(atPath: path + "-prefs")
            do {
                let store = try SQLiteStore(path: path)  // root, creating the journal
                try store.setValue(.string("root"), forKey: "by")
            }
            var info = stat()
            #expect(stat(path + "-prefs", &info) == 0)
            #expect(info.st_uid == nobody)
            let output = try ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", Helper.executable.path]
                    + ["sqlite-set", path, "user", "nobody"])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(try JournalFiles.dump(path).values["user"] == "string \"nobody\"")
        }
    }
#endif
