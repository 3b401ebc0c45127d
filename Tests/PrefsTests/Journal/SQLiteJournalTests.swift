#if os(macOS) || os(Linux)
    import Foundation
    import PrefsEngine
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsEngine

    /// The journal (`<name>-prefs`) with real processes: killed at random moments while writing,
    /// updating and moving records into SQLite; read right after another process's write; and
    /// opened damaged in every way a file can be.
    @Suite struct SQLiteJournalTests {
        private func acknowledged(_ output: ChildOutput) -> [Int] {
            output.stdout.split(separator: "\n").compactMap { Int($0) }
        }

        /// Writes of 4 KB values fill the journal's 1 MiB threshold every 250 writes, so the
        /// kills land in the middle of writes and of checkpoints alike.
        @Test func killedWhileWritingAndCheckpointingLosesNothingAndRepeatsNothing() throws {
            let path = TestFiles.uniquePath("killed-checkpoints")
            let fill = String(repeating: "x", count: 4_000)
            var highest = -1
            // Thirty rounds in CI (ten in a developer's run), and more while the writers have not
            // yet got through several checkpoints (a slow machine, or ThreadSanitizer, writes less
            // in each window).
            let rounds = stressRounds(local: 10, ci: 30)
            var round = 0
            while round < rounds || (highest <= 500 && round < 150) {
                defer { round += 1 }
                let writer = try Helper.start(["sqlite-ack-writer", path, "4000"])
                usleep(UInt32(50_000 + (round * 7_919) % 150_000))
                writer.killIfRunning()
                let output = writer.finish()
                #expect(output.status == SIGKILL, "round \(round): killed, not finished: \(output.stderr)")
                let printed = acknowledged(output)
                #expect(try integrityCheck(path) == "ok", "round \(round)")
                let store = try SQLiteStore(path: path)
                for index in printed where store.value(forKey: "k\(index)") != .string("\(index)\(fill)") {
                    Issue.record("round \(round): acknowledged write k\(index) is missing or wrong")
                    return
                }
                // `latest` only goes up: an older record applied again after a newer one would
                // take it back.
                let latest = store.value(forKey: "latest")
                highest = max(highest, printed.last ?? -1)
                if latest == nil && highest == -1 { continue }  // killed before its first write
                guard case .integer(let stored) = latest, stored >= highest, stored <= highest + 1 else {
                    Issue.record(
                        "round \(round): latest is \(String(describing: latest)), acknowledged \(highest)")
                    return
                }
                highest = Int(stored)
            }
            #expect(highest > 500, "the writers got through several checkpoints")
        }

        /// A process killed at each step of moving the journal into SQLite (before the commit,
        /// after it, after the records are dropped): every write is there once, in order, and
        /// the next process moves what is left.
        @Test(arguments: [StoreEngine.CheckpointStep.beforeCommit, .afterCommit, .afterDrop])
        func killedAtAStepOfACheckpointLosesNothingAndRepeatsNothing(step: StoreEngine.CheckpointStep)
            throws
        {
            let path = TestFiles.uniquePath("checkpoint-\(step.rawValue)")
            for round in 0..<3 {
                let output = try Helper.run(["sqlite-killed-checkpoint", path, step.rawValue, "200"])
                #expect(output.status == SIGKILL, "round \(round): \(output.stderr)")
                #expect(try integrityCheck(path) == "ok")
                let (values, stderr) = try JournalFiles.dump(path)
                let expected = 200 * (round + 1)
                #expect(values["latest"] == "integer \(expected - 1)", "round \(round): \(stderr)")
                #expect(values.count == expected + 1, "round \(round)")
                for index in 0..<expected where values["k\(index)"] != "integer \(index)" {
                    Issue.record("round \(round): k\(index) is \(values["k\(index)"] ?? "missing")")
                    return
                }
            }
            // Everything ends up in SQLite itself once a store closes normally.
            try SQLiteStore(path: path).flush()
            let connection = try SQLiteConnection(path: path, readOnly: true)
            #expect(
                try connection.integer("SELECT count(*) FROM prefs_entries WHERE value IS NOT NULL") == 601)
        }

        /// A process killed half-way through copying the records written during a checkpoint to
        /// the top of the journal loses none of them: the move is noted in the header first, and
        /// the next holder of the lock finishes it (the walk alone would have cut the records at
        /// the half-copied one).
        @Test func killedWhileMovingRecordsLosesNone() throws {
            let path = TestFiles.uniquePath("killed-move")
            let output = try Helper.run(["sqlite-killed-move", path, "300"])
            #expect(output.status == SIGKILL, "\(output.stderr)")
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(stderr.contains("finished moving"), "\(stderr)")
            for index in 0..<300 where values["k\(index)"] != "integer \(index)" {
                Issue.record("k\(index) is \(values["k\(index)"] ?? "missing")")
                return
            }
            for index in 0..<50 where values["m\(index)"] != "integer \(index)" {
                Issue.record(
                    "m\(index), written during the checkpoint, is \(values["m\(index)"] ?? "missing")")
                return
            }
            #expect(try integrityCheck(path) == "ok")
        }

        @Test func killedWhileUpdatingLeavesEachUpdateWhole() throws {
            let path = TestFiles.uniquePath("killed-updates")
            var highest = 0
            for round in 0..<stressRounds(local: 10, ci: 30) {
                let updater = try Helper.start(["sqlite-ack-updater", path])
                usleep(UInt32(40_000 + (round * 7_919) % 100_000))
                updater.killIfRunning()
                let output = updater.finish()
                #expect(output.status == SIGKILL, "round \(round): \(output.stderr)")
                highest = max(highest, acknowledged(output).last ?? 0)
                let values = try SQLiteStore(path: path).snapshot()
                let (a, b, c) = (values["a"], values["b"], values["c"])
                // Killed before its first update:
                if a == nil && b == nil && c == nil && highest == 0 { continue }
                guard a == b, b == c, case .integer(let number)? = a, number >= highest, number <= highest + 1
                else {
                    Issue.record(
                        "round \(round): a, b, c = \(String(describing: (a, b, c))), acknowledged \(highest)")
                    return
                }
                highest = Int(number)
            }
            #expect(highest > 100)
        }

        /// A read that starts after another process's write returned sees it.
        ///
        /// No waiting for a wake-up: the read itself looks at the journal. `latest`, one key read
        /// over and over, is answered from the read slots when nothing moved, and must never lag
        /// either.
        @Test func aReadAfterAnotherProcessesWriteReturnedSeesIt() throws {
            let path = TestFiles.uniquePath("read-after-write")
            let reader = try SQLiteStore(path: path, options: .init(refreshInterval: .seconds(3_600)))
            _ = reader.value(forKey: "latest")
            let writer = try Helper.start(["sqlite-ack-writer", path, "0", "300", "1000"])
            var checked = 0
            var stale: [Int] = []
            var staleLatest: [Int] = []
            let deadline = Date().addingTimeInterval(120)  // a writer that hangs fails below, not the run
            while (writer.isRunning || checked < 1_000) && Date() < deadline {
                let lines = writer.currentStdout.split(separator: "\n")
                guard
                    let last = lines.dropLast(writer.currentStdout.hasSuffix("\n") ? 0 : 1).last.flatMap({
                        Int($0)
                    })
                else {
                    if !writer.isRunning { break }
                    _ = reader.value(forKey: "latest")  // keeps its slot filled
                    continue
                }
                if last >= checked {
                    // `k<last>` and `latest` returned in the writer before its number was printed;
                    // `latest` first, while its slot may still hold an older value.
                    if case .integer(let latest) = reader.value(forKey: "latest"), latest >= last {
                    } else {
                        staleLatest.append(last)
                    }
                    if reader.value(forKey: "k\(last)") != .integer(Int64(last)) { stale.append(last) }
                    checked = last + 1
                }
                if !writer.isRunning && checked >= lines.count { break }
            }
            let output = writer.finish()
            #expect(output.status == 0, "\(output.stderr)")
            #expect(stale.isEmpty, "reads that missed a returned write: \(stale.prefix(10))")
            #expect(
                staleLatest.isEmpty, "reads of `latest` behind a returned write: \(staleLatest.prefix(10))")
            #expect(checked > 100, "the test read while the writer wrote")
        }

        // MARK: - Damaged journals

        @Test func aCrashedStoresJournalIsReplayedOnOpening() throws {
            let path = try JournalFiles.crashedStore(records: 50)
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 50, "\(stderr)")
            #expect(values["k49"] == "integer 49")
        }

        @Test func aRecordFailingItsChecksumCutsTheJournalThereAndIsReported() throws {
            let path = try JournalFiles.crashedStore(records: 50)
            var journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let offsets = JournalFiles.recordOffsets(journal)
            #expect(offsets.count == 50)
            journal[offsets[30] + 21] ^= 0xFF  // inside the 31st record's first entry
            try journal.write(to: URL(fileURLWithPath: path + "-prefs"))
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(
                values.count == 30,
                "records before the bad one are kept, none after it: \(values.keys.sorted())")
            #expect(values["k29"] == "integer 29")
            #expect(stderr.contains("checksum"), "\(stderr)")
        }

        @Test func aTruncatedJournalKeepsItsWholeRecords() throws {
            let path = try JournalFiles.crashedStore(records: 50)
            let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let offsets = JournalFiles.recordOffsets(journal)
            try journal.prefix(offsets[40] + 10).write(to: URL(fileURLWithPath: path + "-prefs"))
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 40, "\(values.keys.sorted())")
            #expect(stderr.contains("kept the records up to"), "the cut is reported: \(stderr)")
        }

        @Test func aHeaderThatLiesAboutItsLengthIsRepairedAndReported() throws {
            let path = try JournalFiles.crashedStore(records: 20)
            var journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let lie = UInt64(1 << 40).littleEndian
            withUnsafeBytes(of: lie) {
                journal.replaceSubrange(
                    Journal.Layout.writeOffsetOffset..<Journal.Layout.writeOffsetOffset + 8, with: $0)
            }
            try journal.write(to: URL(fileURLWithPath: path + "-prefs"))
            let (values, stderr) = try JournalFiles.dump(path)
            #expect(values.count == 20, "\(values.keys.sorted())")
            #expect(stderr.contains("header"), "\(stderr)")
            // Repaired for good: the next store writes after the kept records.
            let store = try SQLiteStore(path: path)
            try store.setValue(.integer(7), forKey: "after")
            #expect(try JournalFiles.dump(path).values.count == 21)
        }

        /// Found by fuzzing: a header claiming sequence numbers no write made (near 2^64) made
        /// the next write overflow and trap; now the numbers start again from the records'.
        @Test func aHeaderWithImpossibleSequenceNumbersIsRepairedAndWritesWork() throws {
            let path = try JournalFiles.crashedStore(records: 5)
            var journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            let lie = UInt64.max.littleEndian
            withUnsafeBytes(of: lie) {
                journal.replaceSubrange(
                    Journal.Layout.sequenceOffset..<Journal.Layout.sequenceOffset + 8, with: $0)
            }
            try journal.write(to: URL(fileURLWithPath: path + "-prefs"))
            let store = try SQLiteStore(path: path)
            #expect(store.keys().count == 5)
            try store.setValue(.integer(9), forKey: "after")
            #expect(store.value(forKey: "after") == .integer(9))
            #expect(try JournalFiles.dump(path).values.count == 6)
        }

        /// Found by fuzzing: a journal cut shorter than its header had the rest of its first page
        /// zeroed under the mapping when the file grew, lock included, and crashed at the next
        /// unlock; now it is grown first.
        @Test func aJournalShorterThanItsHeaderIsGrownBeforeUse() throws {
            let path = try JournalFiles.crashedStore(records: 3)
            let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            try journal.prefix(148).write(to: URL(fileURLWithPath: path + "-prefs"))
            let output = try Helper.run(["sqlite-set", path, "after", "cut"])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(try JournalFiles.dump(path).values["after"] == "string \"cut\"")
        }

        @Test func aJournalOfANewerFormatIsRefusedAndLeftAlone() throws {
            let path = try JournalFiles.crashedStore(records: 3)
            var journal = try Data(contentsOf: URL(fileURLWithPath: path + "-prefs"))
            journal[Journal.Layout.versionOffset] = 99
            try journal.write(to: URL(fileURLWithPath: path + "-prefs"))
            #expect {
                try SQLiteStore(path: path)
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.kind == .newerSchema && error.message.contains("journal format 99")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "-prefs")) == journal)
        }

        @Test func randomDamageNeverCrashesAndKeepsWhatSQLiteHolds() throws {
            let base = try JournalFiles.crashedStore(records: 30)
            try SQLiteStore(path: base).flush()  // SQLite holds k0…k29
            let live = try SQLiteStore(path: base)
            for index in 30..<60 { try live.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            let original = try Data(contentsOf: URL(fileURLWithPath: base + "-prefs"))
            var generator = SystemRandomNumberGenerator()
            for round in 0..<20 {
                let path = TestFiles.uniquePath("damaged-\(round)")
                for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: base + suffix)
                {
                    try FileManager.default.copyItem(atPath: base + suffix, toPath: path + suffix)
                }
                var journal = original
                for _ in 0..<(1 + round % 5) {
                    // Anywhere in the header and the first records, but the lock's bytes: a lock
                    // damaged into "held" makes writers wait out their busy timeout (a typed
                    // error, but ten seconds a round).
                    let index = Int.random(
                        in: 0..<min(journal.count, Journal.Layout.headerSize + 4_096), using: &generator)
                    if (Journal.Layout.lockOffset..<Journal.Layout.lockOffset + 128).contains(index) {
                        continue
                    }
                    journal[index] = UInt8.random(in: 0...255, using: &generator)
                }
                try journal.write(to: URL(fileURLWithPath: path + "-prefs"))
                let output = try Helper.run(["sqlite-dump", path])
                // Refused with a typed error (the helper exits with 2) or opened: never a crash.
                #expect(output.status == 0 || output.status == 2, "round \(round): \(output.stderr)")
                if output.status == 0 {
                    for index in 0..<30 {
                        #expect(
                            output.stdout.contains("k\(index)=integer \(index)"),
                            "round \(round): k\(index) lost")
                    }
                }
            }
            withExtendedLifetime(live) {}
        }
    }
#endif
