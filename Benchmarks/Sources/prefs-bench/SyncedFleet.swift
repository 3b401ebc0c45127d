#if PREFS_POSTGRESQL
    import Foundation
    import Prefs
    import PrefsPostgres

    /// The `--fleet N` workload again, through syncing: the same N observing processes spread
    /// over a few replicas (SQLite files standing for hosts), each a `SyncedStore` with a
    /// `PostgresRemote`, and one writer process on the first replica.
    ///
    /// Measured as ``PostgresFleet`` measures, in the same run: the processes holding
    /// connections and the connections (`pg_stat_activity`, each process named by `PGAPPNAME`),
    /// the server's CPU time per write, and propagation from each write to each observer on
    /// another replica (the writer's own replica sees it through its file, not the server):
    /// until the observer holds that write or a newer one, so a write a newer one replaced
    /// before the observer's replica pulled counts too, until the newer one arrived.
    enum SyncedFleet {
        struct Result {
            var processesConnected: Int
            var connections: Int
            var serverCPUMillisecondsPerWrite: Double
            /// From each write until each observer on another replica holds it or a newer one.
            var latencies: [Double]
            /// Fraction of observers that saw the last write (a replica pulls the newest value
            /// of a key: it may skip writes between two pulls).
            var sawLast: Double
        }

        /// Runs the synced fleet and measures it.
        ///
        /// With `stalled`, a replica of its own (one process, writing every 2 ms, so that it is
        /// pushing or about to most of the time) is stopped with SIGSTOP before the writes, and
        /// stays stopped through them: its connection stays open on the server, as a host's whose
        /// network went silent does. It is left out of the counts of processes and connections.
        static func run(url: String, processes: Int, replicas: Int, writes: Int, stalled: Bool = false)
            throws -> Result
        {
            let namespace = "synced-fleet-\(getpid())"
            let folder = Scratch.path("synced-fleet")
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            func path(_ replica: Int) -> String { "\(folder)/replica\(replica).sqlite" }

            var observers: [(replica: Int, process: Process, lines: LineReader, input: Pipe)] = []
            defer {
                for observer in observers where observer.process.isRunning { observer.process.terminate() }
            }
            for index in 0..<processes {
                let replica = index % replicas
                let input = Pipe()
                let (process, output) = try Processes.startWithOutput(
                    ["synced-fleet-observer", path(replica), url, namespace, String(writes)],
                    environment: ["PGAPPNAME": "prefs-synced-\(replica)-\(index)"], input: input)
                let lines = LineReader(output.fileHandleForReading)
                observers.append((replica, process, lines, input))
                // The first of each replica makes its file before the others open it.
                if index < replicas, lines.next() != "ready" {
                    throw BenchError("a synced observer did not start")
                }
            }
            for observer in observers.dropFirst(replicas) where observer.lines.next() != "ready" {
                throw BenchError("a synced observer did not start")
            }
            // Each replica's link holder has connected (statements and listening share it).
            var connections: [String: Int] = [:]
            for _ in 0..<200 {
                connections = try PostgresFleet.connectionsByProcess(url: url, prefix: "prefs-synced-")
                if connections.count >= replicas { break }
                usleep(50_000)
            }
            usleep(500_000)
            var stalledHost: Process?
            defer {
                if let stalledHost {
                    kill(stalledHost.processIdentifier, SIGKILL)
                    stalledHost.waitUntilExit()
                }
            }
            if stalled {
                let (process, output) = try Processes.startWithOutput(
                    ["synced-fleet-stalled", path(replicas), url, namespace],
                    environment: ["PGAPPNAME": "prefs-stalled"], input: Pipe())
                stalledHost = process
                guard LineReader(output.fileHandleForReading).next() == "ready" else {
                    throw BenchError("the stalled replica did not start")
                }
                usleep(1_000_000)  // connected, and syncing a write every 2 ms
                kill(process.processIdentifier, SIGSTOP)
            }
            let cpuBefore = PostgresFleet.serverCPUNanoseconds()
            let writerInput = Pipe()
            let writer = try Processes.startWithOutput(
                ["synced-fleet-writer", path(0), url, namespace, String(writes)],
                environment: ["PGAPPNAME": "prefs-synced-0-writer"], input: writerInput)
            let writerLines = LineReader(writer.output.fileHandleForReading)
            guard writerLines.next() == "done", let timesLine = writerLines.next() else {
                throw BenchError("the synced fleet writer failed")
            }
            let written = timesLine.split(separator: ",").compactMap { Double($0) }
            connections = try PostgresFleet.connectionsByProcess(url: url, prefix: "prefs-synced-")
            var latencies: [Double] = []
            var sawLast = 0
            for observer in observers {
                // "seen N ordered B last L", the milliseconds of each sight, then "number@time"
                // for each sight.
                guard let summary = observer.lines.next(), observer.lines.next() != nil,
                    let sightings = observer.lines.next()
                else { continue }
                let fields = summary.split(separator: " ")
                if fields.count == 6, fields[5] == String(writes - 1) { sawLast += 1 }
                if observer.replica != 0 { latencies += holding(written: written, sightings: sightings) }
            }
            let cpu = PostgresFleet.serverCPUMilliseconds(since: cpuBefore, per: writes)
            try PostgresFleet.end(
                [writer.process] + observers.map(\.process), [writerInput] + observers.map(\.input))
            return Result(
                processesConnected: connections.count, connections: connections.values.reduce(0, +),
                serverCPUMillisecondsPerWrite: cpu, latencies: latencies,
                sawLast: Double(sawLast) / Double(max(processes, 1)))
        }

        /// For each write, the milliseconds until the observer held it or a newer one, from the
        /// writer's times and the observer's sightings (`number@time`, in the order seen).
        static func holding(written: [Double], sightings: String) -> [Double] {
            var latencies: [Double] = []
            var next = 0  // the first write not yet held
            for sighting in sightings.split(separator: ",") {
                let parts = sighting.split(separator: "@")
                guard parts.count == 2, let number = Int(parts[0]), let time = Double(parts[1]) else {
                    continue
                }
                while next <= number, next < written.count {
                    latencies.append(time - written[next])
                    next += 1
                }
            }
            return latencies
        }

        /// The synced store of a fleet process: the replica's file, the server's namespace.
        static func store(path: String, url: String, namespace: String) throws -> SyncedStore {
            try SyncedStore(
                local: try SQLiteStore(path: path), remote: try PostgresRemote(url: url, namespace: namespace)
            )
        }
    }
#endif
