import Foundation

#if PREFS_POSTGRESQL
    /// The PostgreSQL figures, against the server at `url` (the benchmark starts none).
    func postgresMetrics(url postgresURL: String, sizes: Sizes, progress: (String) -> Void) throws -> [Metric]
    {
        var metrics: [Metric] = []
        progress("PostgreSQL propagation")
        let latencies = try PostgresWorkloads.propagationLatencies(
            url: postgresURL, samples: sizes.latencySamples)
        metrics.append(
            Metric(
                key: "postgres_propagation_ms_p50",
                what:
                    "a PostgresStore write in one process until an observer in another sees it (\(latencies.count) samples)",
                baseline: nil, value: Measure.percentile(latencies, 0.5), unit: "ms", goal: nil))
        metrics.append(
            Metric(
                key: "postgres_propagation_ms_p99", what: "the same, 99th percentile", baseline: nil,
                value: Measure.percentile(latencies, 0.99), unit: "ms", goal: .atMost(50)))
        progress("PostgreSQL writes against raw libpq")
        let writes = try PostgresWorkloads.writeAgainstRaw(
            url: postgresURL, writes: 500, repetitions: sizes.repetitions)
        metrics.append(
            Metric(
                key: "postgres_write_vs_raw_libpq",
                what:
                    "PostgresStore write (transaction, advisory lock, NOTIFY) ÷ raw libpq upsert; baseline in ns",
                baseline: writes.raw, value: writes.prefs / writes.raw, unit: "ratio", goal: nil))
        return metrics
    }

    /// The fleet figures: `listeners` observing processes and one writer on the server at `url`.
    func fleetMetrics(url: String, listeners: Int, quick: Bool, progress: (String) -> Void) throws -> [Metric]
    {
        progress("PostgreSQL fleet: \(listeners) observing processes, one writing every 5 ms")
        let writes = quick ? 400 : 2_000
        let fleet = try PostgresFleet.run(url: url, listeners: listeners, writes: writes)
        let replicas = max(1, listeners / 10)
        progress(
            "the same fleet synced: \(listeners) processes on \(replicas) replicas (SyncedStore, PostgresRemote)"
        )
        let synced = try SyncedFleet.run(url: url, processes: listeners, replicas: replicas, writes: writes)
        progress(
            "the synced fleet again, with one more replica stopped (SIGSTOP) in the middle of its syncing")
        let stalled = try SyncedFleet.run(
            url: url, processes: listeners, replicas: replicas, writes: writes, stalled: true)
        return [
            Metric(
                key: "postgres_connections_per_process",
                what: "server connections of each fleet process (three stores on three namespaces each)",
                baseline: nil, value: fleet.connectionsPerProcess, unit: "", goal: .atMost(2)),
            Metric(
                key: "postgres_server_cpu_ms_per_write",
                what:
                    "CPU time of every postgres process on this machine per write, with \(listeners) listening processes",
                baseline: nil, value: fleet.serverCPUMillisecondsPerWrite, unit: "ms", goal: .atMost(0.5)),
            Metric(
                key: "postgres_fleet_propagation_ms_p50",
                what:
                    "a write until each of the \(listeners) observers sees it (\(fleet.latencies.count) samples)",
                baseline: nil, value: Measure.percentile(fleet.latencies, 0.5), unit: "ms", goal: nil),
            Metric(
                key: "postgres_fleet_propagation_ms_p99", what: "the same, 99th percentile", baseline: nil,
                value: Measure.percentile(fleet.latencies, 0.99), unit: "ms", goal: .atMost(20)),
            Metric(
                key: "postgres_fleet_complete",
                what: "fraction of observers that saw all \(writes) writes, in commit order",
                baseline: nil, value: fleet.complete, unit: "fraction", goal: .equals(1)),
            Metric(
                key: "synced_fleet_processes_connected",
                what:
                    "processes holding server connections, of the \(listeners + 1) synced processes on \(replicas) replicas (goal: one per replica)",
                baseline: nil, value: Double(synced.processesConnected), unit: "",
                goal: .equals(Double(replicas))),
            Metric(
                key: "synced_fleet_connections",
                what:
                    "server connections of the synced fleet (one per replica's link: statements and listening)",
                baseline: nil, value: Double(synced.connections), unit: "", goal: .equals(Double(replicas))),
            Metric(
                key: "synced_fleet_server_cpu_vs_postgres_store",
                what:
                    "server CPU per write, synced fleet ÷ the PostgresStore fleet above (every process listening); baseline in ms",
                baseline: fleet.serverCPUMillisecondsPerWrite,
                value: synced.serverCPUMillisecondsPerWrite / fleet.serverCPUMillisecondsPerWrite,
                unit: "ratio",
                goal: .atMost(0.2)),
            Metric(
                key: "synced_fleet_propagation_ms_p50",
                what:
                    "a synced write on one replica until each observer on another sees it (\(synced.latencies.count) samples: a replica pulls each key's newest value, skipping some)",
                baseline: nil, value: Measure.percentile(synced.latencies, 0.5), unit: "ms", goal: nil),
            Metric(
                key: "synced_fleet_propagation_ms_p99", what: "the same, 99th percentile", baseline: nil,
                value: Measure.percentile(synced.latencies, 0.99), unit: "ms", goal: nil),
            Metric(
                key: "synced_fleet_stalled_propagation_ms_p50",
                what:
                    "the same propagation with one more replica stopped (SIGSTOP) while syncing, its connection left open (\(stalled.latencies.count) samples)",
                baseline: nil, value: Measure.percentile(stalled.latencies, 0.5), unit: "ms", goal: nil),
            Metric(
                key: "synced_fleet_stalled_propagation_ms_p99",
                what: "the same, 99th percentile (the fleet's promise: within 1 s with a host stalled)",
                baseline: nil, value: Measure.percentile(stalled.latencies, 0.99), unit: "ms",
                goal: .atMost(1_000)),
            Metric(
                key: "synced_fleet_stalled_saw_last",
                what: "fraction of synced observers that saw the last write, with a replica stalled",
                baseline: nil, value: stalled.sawLast, unit: "fraction", goal: .equals(1)),
            Metric(
                key: "synced_fleet_saw_last",
                what: "fraction of synced observers that saw the last of the \(writes) writes",
                baseline: nil, value: synced.sawLast, unit: "fraction", goal: .equals(1)),
        ]
    }
#endif
