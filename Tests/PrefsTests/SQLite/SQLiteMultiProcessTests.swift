#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    import PrefsSupport

    /// Real processes (PrefsTestHelper) sharing one SQLite file.
    @Suite struct SQLiteMultiProcessTests {
        @Test func fourProcessesWritingDistinctKeysLoseNothing() throws {
            let path = TestFiles.uniquePath("writers")
            let writers = try (0..<4).map { try Helper.start(["sqlite-write", path, "p\($0)", "1000"]) }
            for writer in writers {
                let output = writer.finish()
                #expect(output.status == 0, "\(output.stderr)")
            }
            let values = try SQLiteStore(path: path).snapshot()
            #expect(values.count == 4_000)
            for process in 0..<4 {
                for index in 0..<1_000 where values["p\(process).\(index)"] != .integer(Int64(index)) {
                    Issue.record(
                        "p\(process).\(index) is \(String(describing: values["p\(process).\(index)"]))")
                    return
                }
            }
        }

        /// 4 × 250 and 8 × 500 `update { count += 1 }` in as many processes end at exactly the sum.
        @Test(arguments: zip([4, 8], [250, 500]))
        func processesIncrementingOneKeyEndAtExactlyTheSum(processes: Int, each: Int) throws {
            let path = TestFiles.uniquePath("counters")
            let incrementers = try (0..<processes).map { _ in
                try Helper.start(["sqlite-increment", path, "count", String(each)])
            }
            for incrementer in incrementers {
                let output = incrementer.finish()
                #expect(output.status == 0, "\(output.stderr)")
            }
            #expect(try SQLiteStore(path: path).value(forKey: "count") == .integer(Int64(processes * each)))
        }

        @Test func everyAcknowledgedWriteSurvivesKillNine() throws {
            let path = TestFiles.uniquePath("killed")
            var acknowledged = -1
            for round in 0..<20 {
                let writer = try Helper.start(["sqlite-ack-writer", path])
                // A different moment each round: some kills land while the file is being created.
                usleep(UInt32(5_000 + (round * 7_919) % 120_000))
                writer.killIfRunning()
                let output = writer.finish()
                #expect(output.status == SIGKILL, "round \(round): the writer was killed, not finished")
                let printed = output.stdout.split(separator: "\n").compactMap { Int($0) }
                acknowledged = max(acknowledged, printed.last ?? -1)

                #expect(try integrityCheck(path) == "ok", "round \(round)")
                let values = try SQLiteStore(path: path).snapshot()
                for index in printed where values["k\(index)"] != .integer(Int64(index)) {
                    Issue.record("round \(round): acknowledged write k\(index) is missing")
                    return
                }
            }
            #expect(acknowledged > 0, "the writer acknowledged some writes before being killed")
        }

        @Test func anotherProcessesWriteReachesObservers() async throws {
            let path = TestFiles.uniquePath("observed")
            let store = try SQLiteStore(path: path)
            let prefs = IssueRecorder().preferences(store)
            let seen = Locked<[String?]>([])
            let observation = prefs.observe(.username, initial: false) { name in
                seen.withLock { $0.append(name) }
            }

            let writer = try Helper.run(["sqlite-set", path, "username", "from another process"])
            #expect(writer.status == 0, "\(writer.stderr)")
            #expect(await eventually { seen.withLock { $0 } == ["from another process"] })
            #expect(prefs[.username] == "from another process")
            _ = observation
        }
    }
#endif
