#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Prefs
    import PrefsPostgres
    import Testing

    /// Issue "Settings that follow the user and the fleet", item 4: the processes of a machine
    /// that sync one SQLite file share one link to the server.
    @Suite(.serialized, .enabled(if: PostgresServer.isAvailable)) struct SyncLinkTests {
        /// Three processes write one file, and one of them talks to the server for all three.
        ///
        /// Killed with `kill -9`, it is replaced once its lease runs out, and the writes go on
        /// arriving.
        @Test func processesOnOneFileShareOneLinkTakenOverWhenItsHolderIsKilled() async throws {
            let server = try PostgresServer()
            defer { server.remove() }
            let folder = ScratchFolder.make("link")
            let path = folder.appendingPathComponent("shared.sqlite").path
            // One first, so that the file exists before the others open it.
            var children = [try Helper.start(["synced-writer", path, server.url, "team", "a"])]
            #expect(await eventually { children[0].currentStdout.contains("ready") })
            for name in ["b", "c"] {
                children.append(try Helper.start(["synced-writer", path, server.url, "team", name]))
            }
            defer {
                for child in children where child.isRunning {
                    child.killIfRunning()
                }
            }

            let remote = try PostgresRemote(url: server.url, namespace: "team")
            func latest(_ name: String) -> Int64? {
                let entry = (try? remote.pull(after: nil))?.entries.first { $0.key == "\(name).latest" }
                guard case .integer(let number)? = entry?.value else { return nil }
                return number
            }
            func holders() -> [ChildProcess] {
                children.filter { $0.isRunning && $0.currentStdout.contains("link") }
            }
            #expect(await eventually { holders().count == 1 })
            #expect(
                await eventually { ["a", "b", "c"].allSatisfy { latest($0) != nil } },
                "every process's writes arrive")
            // One process's connection (statements and listening share it) and this test's
            // reader: three processes linking each would hold four.
            #expect(await eventually { (try? server.clientConnections()) == 2 })

            let holder = try #require(holders().first)
            holder.killIfRunning()
            _ = holder.finish()
            let survivors = children.filter { $0 !== holder }
            let started = Date()
            #expect(await eventually(within: 20) { survivors.contains { $0.currentStdout.contains("link") } })
            // The lease runs out within six seconds of the kill, and the others look when the
            // lease they saw ends (a loaded machine adds its own delays).
            let takeover = Date().timeIntervalSince(started)
            print("SyncLinkTests: the link was taken over in \(takeover) s")
            #expect(takeover < 15, "taken over within a lease and a little on a loaded machine")
            let before = ["a", "b", "c"].map { latest($0) ?? -1 }
            #expect(
                await eventually {
                    zip(["a", "b", "c"], before).contains { name, last in
                        survivors.contains { $0.currentStdout.contains("ready") }
                            && (latest(name) ?? -1) > last
                    }
                }, "writes go on arriving")
            #expect(await eventually { (try? server.clientConnections()) == 2 }, "the new holder's alone")
            for child in survivors { child.killIfRunning() }
        }
    }
#endif
