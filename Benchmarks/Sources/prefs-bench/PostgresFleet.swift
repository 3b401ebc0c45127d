#if PREFS_POSTGRESQL
    import BenchLibPQ
    import Foundation
    import Prefs
    import PrefsPostgres

    /// The `--fleet N` workload: one service run as N instances on one PostgreSQL server.
    ///
    /// N observer processes (each with two more stores on other namespaces, as a service has
    /// several) observe one namespace while one process writes a key every 5 ms.
    ///
    /// Measured: connections per process (from `pg_stat_activity`, each process named by
    /// `PGAPPNAME`), the server's CPU time per write (the `schedstat` of every `postgres` process,
    /// so the server must run on this machine), propagation from the write to each observer, and
    /// whether every observer saw every write in commit order.
    enum PostgresFleet {
        struct Result {
            var connectionsPerProcess: Double
            var serverCPUMillisecondsPerWrite: Double
            var latencies: [Double]
            /// Fraction of observers that saw every write, in order, ending at the last.
            var complete: Double
        }

        static let writeInterval: useconds_t = 5_000

        static func run(url: String, listeners: Int, writes: Int) throws -> Result {
            let namespace = "fleet-\(getpid())"
            var observers: [(process: Process, lines: LineReader, input: Pipe)] = []
            defer {
                for observer in observers where observer.process.isRunning { observer.process.terminate() }
            }
            for index in 0..<listeners {
                let input = Pipe()
                let (process, output) = try Processes.startWithOutput(
                    ["pg-fleet-observer", url, namespace, String(writes)],
                    environment: ["PGAPPNAME": "prefs-fleet-\(index)"], input: input)
                observers.append((process, LineReader(output.fileHandleForReading), input))
            }
            for observer in observers {
                guard observer.lines.next() == "ready" else {
                    throw BenchError("a fleet observer did not start")
                }
            }
            // Every observer has loaded, on its listening connection.
            usleep(500_000)
            let cpuBefore = serverCPUNanoseconds()
            let writerInput = Pipe()
            let writer = try Processes.startWithOutput(
                ["pg-fleet-writer", url, namespace, String(writes)],
                environment: ["PGAPPNAME": "prefs-fleet-writer"], input: writerInput)
            guard LineReader(writer.output.fileHandleForReading).next() == "done" else {
                throw BenchError("the fleet writer failed")
            }
            // Every process still holds what it opened: the writer its two, the observers one.
            let connections = try connectionsByProcess(url: url)
            var latencies: [Double] = []
            var complete = 0
            for observer in observers {
                // "seen N ordered B last L", then one line of comma-separated milliseconds.
                guard let summary = observer.lines.next(), let line = observer.lines.next() else { continue }
                let fields = summary.split(separator: " ")
                if fields.count == 6, fields[1] == String(writes), fields[3] == "true",
                    fields[5] == String(writes - 1)
                {
                    complete += 1
                }
                latencies += line.split(separator: ",").compactMap { Double($0) }
            }
            // Read while every backend is still there (ended backends take their CPU time with them).
            let cpu = serverCPUMilliseconds(since: cpuBefore, per: writes)
            try end([writer.process] + observers.map(\.process), [writerInput] + observers.map(\.input))
            return Result(
                connectionsPerProcess: Double(connections.values.max() ?? 0),
                serverCPUMillisecondsPerWrite: cpu,
                latencies: latencies, complete: Double(complete) / Double(max(listeners, 1)))
        }

        // MARK: - The children

        /// `pg-fleet-observer URL NAMESPACE WRITES`: opens the namespace and two others, and
        /// observes the first (see ``observe(_:writes:)``).
        static func observe(url: String, namespace: String, writes: Int) throws {
            let store = try PostgresStore(url: url, namespace: namespace)
            let others = try (0..<2).map {
                try PostgresStore(url: url, namespace: "\(namespace)-other-\($0)")
            }
            observe(store, writes: writes)
            withExtendedLifetime(others) {}
        }

        /// Observes `stamp` in `store`, prints `ready`; once it has seen the last write (or
        /// after two minutes) prints what it saw — `seen N ordered B last L`, then the
        /// milliseconds from each write to its sight, then each write seen and when
        /// (`number@milliseconds since 1970`) — and keeps its store open until its input closes.
        static func observe(_ store: any PreferenceStore, writes: Int) {
            let log = Locked((latencies: [Double](), seen: 0, ordered: true, last: -1, sightings: [String]()))
            let done = DispatchSemaphore(value: 0)
            let observation = store.observe { change in
                guard case .set(.array(let parts))? = change.values["stamp"], parts.count == 2,
                    case .integer(let number) = parts[0], case .double(let written) = parts[1]
                else { return }
                let now = Date().timeIntervalSince1970
                log.withLock { log in
                    log.latencies.append((now - written) * 1_000)
                    log.sightings.append(String(format: "%d@%.3f", number, now * 1_000))
                    log.seen += 1
                    if Int(number) <= log.last { log.ordered = false }
                    log.last = Int(number)
                }
                if number == writes - 1 { done.signal() }
            }
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            _ = done.wait(timeout: .now() + 120)
            let (latencies, seen, ordered, last, sightings) = log.withLock { $0 }
            let report =
                "seen \(seen) ordered \(ordered) last \(last)\n"
                + latencies.map { String(format: "%.3f", $0) }.joined(separator: ",") + "\n"
                + sightings.joined(separator: ",") + "\n"
            FileHandle.standardOutput.write(Data(report.utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            withExtendedLifetime((store, observation)) {}
        }

        /// `pg-fleet-writer URL NAMESPACE WRITES`: writes `stamp` = [number, time] every 5 ms,
        /// prints `done`, and keeps its connections until its input closes.
        static func write(url: String, namespace: String, writes: Int) throws {
            try write(to: try PostgresStore(url: url, namespace: namespace), writes: writes)
        }

        /// Writes `stamp` = [number, time] to `store` every 5 ms, prints `done` and then when
        /// each write was made (milliseconds since 1970), and keeps the store open until its
        /// input closes.
        static func write(to store: any PreferenceStore, writes: Int) throws {
            var times: [String] = []
            for number in 0..<writes {
                let now = Date().timeIntervalSince1970
                try store.setValue(.array([.integer(Int64(number)), .double(now)]), forKey: "stamp")
                times.append(String(format: "%.3f", now * 1_000))
                usleep(writeInterval)
            }
            FileHandle.standardOutput.write(Data(("done\n" + times.joined(separator: ",") + "\n").utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            withExtendedLifetime(store) {}
        }

        /// Closes the children's input (each then lets its connections go and ends), and waits
        /// for them.
        static func end(_ processes: [Process], _ inputs: [Pipe]) throws {
            for input in inputs { try input.fileHandleForWriting.close() }
            for process in processes { process.waitUntilExit() }
        }

        // MARK: - The server

        /// The server's CPU time since `before` (``serverCPUNanoseconds()``), in milliseconds
        /// per write; not a number when the server runs elsewhere.
        static func serverCPUMilliseconds(since before: UInt64?, per writes: Int) -> Double {
            guard let before, let after = serverCPUNanoseconds(), after >= before else { return .nan }
            return Double(after - before) / 1e6 / Double(writes)
        }

        /// The connections of each process named `prefs-fleet-…`.
        static func connectionsByProcess(url: String, prefix: String = "prefs-fleet-") throws -> [String: Int]
        {
            let connection = PQconnectdb(url)
            defer { PQfinish(connection) }
            guard PQstatus(connection) == CONNECTION_OK else {
                throw BenchError("cannot connect to count connections")
            }
            let result = PQexec(
                connection,
                "SELECT application_name, count(*) FROM pg_stat_activity WHERE application_name LIKE '\(prefix)%' GROUP BY 1"
            )
            defer { PQclear(result) }
            var counts: [String: Int] = [:]
            for row in 0..<PQntuples(result) {
                counts[String(cString: PQgetvalue(result, row, 0))] = Int(
                    String(cString: PQgetvalue(result, row, 1)))
            }
            return counts
        }

        /// The CPU time of every `postgres` process on this machine (nanoseconds, from
        /// `/proc/PID/schedstat`), or `nil` when there is none (the server runs elsewhere).
        static func serverCPUNanoseconds() -> UInt64? {
            let pids =
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter {
                    $0.allSatisfy(\.isNumber)
                } ?? []
            var total: UInt64 = 0
            var found = false
            for pid in pids {
                guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                    comm.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres",
                    let schedstat = try? String(contentsOfFile: "/proc/\(pid)/schedstat", encoding: .utf8),
                    let nanoseconds = schedstat.split(separator: " ").first.flatMap({ UInt64($0) })
                else { continue }
                total += nanoseconds
                found = true
            }
            return found ? total : nil
        }
    }
#endif
