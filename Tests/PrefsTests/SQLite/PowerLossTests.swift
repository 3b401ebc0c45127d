#if os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs

    /// Power loss, simulated, and every image checked against what was acknowledged.
    ///
    /// A writer runs with every `fsync` and `fdatasync` recorded (the
    /// preloaded `Tests/PowerLoss/sync_recorder.c` copies each synced file), is killed at a
    /// random moment, and disk images are made from each file's last synced copy plus random
    /// pages written since, some torn (``PowerLossImages``). Each image is opened by a fresh
    /// process and checked against what the writer acknowledged.
    ///
    /// CI (`CI=true`) runs 240 images, every time; a developer's `swift test` runs 24, to stay
    /// within 90 seconds; `PREFS_POWERLOSS_CRASHES=100 swift test --filter PowerLossTests` runs more
    /// (see `Fuzz/README.md`).
    @Suite(.serialized) struct PowerLossTests {
        /// Crashes per durability mode (each gives `imagesPerCrash` images).
        private let crashes =
            Int(ProcessInfo.processInfo.environment["PREFS_POWERLOSS_CRASHES"] ?? "")
            ?? stressRounds(local: 1, ci: 10)
        private let imagesPerCrash = 12

        /// The recorder, built once per test process with the toolchain's clang.
        private static let recorder: Result<String, TestFailure> = {
            let source = TestFiles.repository.appendingPathComponent("Tests/PowerLoss/sync_recorder.c").path
            let library = TestFiles.folder.appendingPathComponent("libsync_recorder.so").path
            guard let clang = try? Toolchain.tool("clang") else {
                return .failure(TestFailure("no clang next to the swift on PATH to build \(source) with"))
            }
            guard
                let output = try? ChildProcess.run(
                    clang, ["-shared", "-fPIC", "-O1", "-o", library, source, "-ldl"]),
                output.status == 0
            else { return .failure(TestFailure("cannot build \(source) with \(clang.path)")) }
            return .success(library)
        }()

        /// A folder whose files the recorder watches, the folder of their synced copies, and the
        /// environment that preloads the recorder for them.
        private struct Recorded {
            let folder: String
            let synced: String
            let environment: [String: String?]

            init(_ name: String, library: String) throws {
                // The recorder matches paths by their start, and SQLite is given the folder with
                // its links resolved (the library's own files keep the name as given): the watched
                // folder is named without links, so both spellings are the same.
                folder =
                    TestFiles.folder.resolvingSymlinksInPath().appendingPathComponent("\(name)-\(UUID())")
                    .path
                synced = folder + ".synced"
                for made in [folder, synced] {
                    try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: true)
                }
                environment = [
                    "LD_PRELOAD": library, "PREFS_POWERLOSS_WATCH": folder, "PREFS_POWERLOSS_SYNCED": synced,
                ]
            }

            /// The calls the recorder logged, in order.
            func calls() throws -> [String] {
                try String(contentsOfFile: synced + "/calls.log", encoding: .utf8).split(separator: "\n")
                    .map(String.init)
            }
        }

        /// What one image held, as the helper's `sqlite-indices` reads it.
        private struct Found {
            var indices: Set<Int> = []
            var bad: [String] = []
        }

        private func read(_ path: String) throws -> Found {
            let child = try ChildProcess.start(Helper.executable, ["sqlite-indices", path])
            // An image that hangs the opener fails here instead of hanging the tests.
            let output = child.finish(within: 30)
            if output.killedAtBound { throw TestFailure("opening \(path) hung: \(output.stderr)") }
            guard output.status == 0 else { throw TestFailure("opening \(path) failed: \(output.stderr)") }
            var found = Found()
            for line in output.stdout.split(separator: "\n") {
                if let index = Int(line) {
                    found.indices.insert(index)
                } else if line.hasPrefix("bad") {
                    found.bad.append(String(line))
                }
            }
            return found
        }

        @Test(arguments: ["powerSafe", "committed"])
        func noImageLosesWhatItsModePromises(mode: String) async throws {
            let library = try Self.recorder.get()
            var generator = SystemRandomNumberGenerator()
            var images = 0
            var lost: [String] = []
            for crash in 0..<crashes {
                let recorded = try Recorded("power-\(mode)-\(crash)", library: library)
                let (folder, synced) = (recorded.folder, recorded.synced)
                let path = folder + "/p.sqlite"
                // 4 KB values fill the journal's 1 MiB checkpoint threshold every 250 writes, so
                // crashes land in checkpoints and moves too; `.committed` writes (no sync) pause
                // 300 µs each, or the files would grow to hundreds of megabytes in a second.
                let writer = try ChildProcess.start(
                    Helper.executable,
                    ["sqlite-ack-writer", path, "4000", mode == "powerSafe" ? "0" : "300"],
                    environment: recorded.environment.merging(["PREFS_TEST_DURABILITY": mode]) { $1 })
                usleep(UInt32.random(in: 200_000...1_500_000, using: &generator))
                writer.killIfRunning()
                let output = writer.finish()
                let acknowledged = output.stdout.split(separator: "\n").compactMap { Int($0) }
                #expect(output.status == SIGKILL, "the writer ended early: \(output.stderr)")
                let files = PowerLossImages(
                    live: folder, synced: synced, names: ["p.sqlite", "p.sqlite-wal", "p.sqlite-prefs"])
                for image in 0..<imagesPerCrash {
                    let imageFolder = folder + ".image-\(image)"
                    try FileManager.default.createDirectory(
                        atPath: imageFolder, withIntermediateDirectories: true)
                    try files.make(into: imageFolder, using: &generator)
                    images += 1
                    let found = try read(imageFolder + "/p.sqlite")
                    let what = "crash \(crash) image \(image)"
                    if !found.bad.isEmpty {
                        lost.append("\(what): keys holding values never written: \(found.bad)")
                    }
                    if mode == "powerSafe" {
                        let missing = acknowledged.filter { !found.indices.contains($0) }
                        if !missing.isEmpty {
                            lost.append(
                                "\(what): \(missing.count) acknowledged writes lost, first k\(missing[0])")
                        }
                    } else if let highest = found.indices.max(), found.indices.count != highest + 1 {
                        lost.append(
                            "\(what): not a prefix of the writes (\(found.indices.count) keys up to k\(highest))"
                        )
                    }
                    #expect(try integrityCheck(imageFolder + "/p.sqlite") == "ok", "\(what)")
                    try? FileManager.default.removeItem(atPath: imageFolder)
                    // Each image takes a fraction of a second of waiting on child processes; the
                    // run's other tests get this thread between them (CI's 240 images held one of
                    // its two threads for minutes).
                    await Task.yield()
                }
                for removed in [folder, synced] { try? FileManager.default.removeItem(atPath: removed) }
            }
            #expect(lost.isEmpty, "\(lost.prefix(10).joined(separator: "\n"))")
            print("power loss (\(mode)): \(images) images of \(crashes) crashes, \(lost.count) broken")
        }

        /// Creating the journal syncs its folder (`fsync` on the folder; SQLite's own syncs of it
        /// are `fdatasync`), so a power loss cannot take the new file's name while `.powerSafe`
        /// writes in it were acknowledged; opening an existing journal does not.
        @Test func creatingTheJournalSyncsItsFolder() throws {
            let library = try Self.recorder.get()
            let recorded = try Recorded("power-folder", library: library)
            for (round, expected) in [(0, 1), (1, 1)] {
                let output = try ChildProcess.run(
                    Helper.executable, ["sqlite-set", recorded.folder + "/p.sqlite", "k\(round)", "v"],
                    environment: recorded.environment)
                #expect(output.status == 0, "\(output.stderr)")
                #expect(try recorded.calls().filter { $0 == "fsync ." }.count == expected, "round \(round)")
            }
        }

        /// A `.powerSafe` write syncs the journal's mapped bytes and then the file: `msync`
        /// (the only call documented to write a shared mapping back on Apple platforms) comes
        /// before every `fdatasync` of the journal, in Apple's sequence, which
        /// `PREFS_JOURNAL_SYNC=msync` runs on Linux (Linux's own `fdatasync` writes mapped pages
        /// back by itself, and the power-loss runs check that).
        @Test func aPowerSafeWriteSyncsTheMappingBeforeTheFile() throws {
            let library = try Self.recorder.get()
            let recorded = try Recorded("power-order", library: library)
            let output = try ChildProcess.run(
                Helper.executable, ["sqlite-ack-writer", recorded.folder + "/p.sqlite", "0", "0", "5"],
                environment: recorded.environment.merging([
                    "PREFS_TEST_DURABILITY": "powerSafe",
                    // Apple's sequence (msync, then the file's sync) on Linux.
                    "PREFS_JOURNAL_SYNC": "msync",
                ]) { $1 })
            #expect(output.status == 0, "\(output.stderr)")
            let calls = try recorded.calls()
            let journalSyncs = calls.indices.filter { calls[$0] == "fdatasync p.sqlite-prefs" }
            #expect(journalSyncs.count >= 10, "\(calls)")  // two writes per acknowledged index
            for index in journalSyncs {
                #expect(index > 0 && calls[index - 1] == "msync", "\(calls[max(0, index - 2)...index])")
            }
        }
    }
#endif
