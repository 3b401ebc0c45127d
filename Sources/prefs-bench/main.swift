// prefs-bench: Prefs measured against the baselines a user would otherwise pick, in the same run.
//
//   swift run -c release prefs-bench [--quick] [--json] [--plot PATH] [--postgres URL [--fleet N]]
//
// Every figure is the median of several repetitions; ratios compare figures measured side by side.
import Foundation
import Prefs

/// One line of the report.
struct Metric {
    let key: String
    let what: String
    let baseline: Double?
    let value: Double
    let unit: String
    let goal: Goal?

    enum Goal {
        case atMost(Double)
        case equals(Double)

        var text: String {
            switch self {
            case .atMost(let limit): "≤ \(Report.format(limit))"
            case .equals(let target): "= \(Report.format(target))"
            }
        }

        func holds(_ value: Double) -> Bool {
            switch self {
            case .atMost(let limit): value <= limit
            case .equals(let target): value == target
            }
        }
    }
}

enum Report {
    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.3f", value)
    }

    static func table(_ metrics: [Metric], repetitions: Int, quick: Bool) -> String {
        var lines = [
            "prefs-bench (\(quick ? "--quick" : "full sizes"); each figure the median of \(repetitions) repetitions after a warm-up)",
            "",
            pad(["metric", "baseline", "Prefs", "unit", "goal", "holds"]),
        ]
        for metric in metrics {
            let holds = metric.goal.map { $0.holds(metric.value) ? "yes" : "NO" } ?? "(report)"
            lines.append(
                pad([
                    metric.key, metric.baseline.map(format) ?? "—", format(metric.value), metric.unit,
                    metric.goal?.text ?? "—", holds,
                ]))
        }
        lines.append("")
        for metric in metrics { lines.append("  \(metric.key): \(metric.what)") }
        return lines.joined(separator: "\n")
    }

    private static func pad(_ columns: [String]) -> String {
        let widths = [36, 12, 12, 10, 9, 8]
        return zip(columns, widths).map {
            $0.padding(toLength: max($1, $0.count), withPad: " ", startingAt: 0)
        }
        .joined(separator: " ")
    }

    static func json(_ metrics: [Metric]) -> String {
        let entries = metrics.map { "  \"\($0.key)\": \($0.value.isFinite ? "\($0.value)" : "null")" }
        return "{\n" + entries.joined(separator: ",\n") + "\n}"
    }
}

func runBenchmarks(quick: Bool, json: Bool, plotPath: String?, postgresURL: String?, fleet: Int?) throws {
    let sizes = quick ? Sizes.quick : Sizes.full
    let workloads = Workloads(sizes: sizes)
    let progress = { (text: String) in if !json { FileHandle.standardError.write(Data("… \(text)\n".utf8)) } }
    var metrics: [Metric] = []
    let cpuAtStart = MachineCPU.now()

    progress("reads through UserDefaultsStore")
    let reads = workloads.readOverheadUserDefaults()
    metrics.append(
        Metric(
            key: "read_overhead_userdefaults",
            what:
                "typed read via Preferences on UserDefaultsStore ÷ plain UserDefaults string/integer/double(forKey:); ns per read",
            baseline: reads.plain, value: reads.prefs / reads.plain, unit: "ratio", goal: .atMost(1.10)))

    progress("writes through UserDefaultsStore")
    let writes = workloads.writeOverheadUserDefaults()
    metrics.append(
        Metric(
            key: "write_overhead_userdefaults",
            what:
                "typed write ÷ plain UserDefaults.set, no synchronize on either side; baseline in ns per write",
            baseline: writes.plain, value: writes.prefs / writes.plain, unit: "ratio", goal: .atMost(1.10)))

    progress("SQLite reads")
    let sqliteReads = try workloads.sqliteReadNanoseconds()
    metrics.append(
        Metric(
            key: "sqlite_read_ns", what: "typed read of an Int from SQLiteStore (from its read slots)",
            baseline: nil, value: sqliteReads.integer, unit: "ns", goal: .atMost(30)))
    metrics.append(
        Metric(
            key: "sqlite_read_string_ns",
            what: "typed read of a String from SQLiteStore (under the cache's lock)",
            baseline: nil, value: sqliteReads.string, unit: "ns", goal: nil))

    progress("SQLite writes against raw SQLite")
    let sqliteWrites = try workloads.sqliteWriteAgainstRaw()
    metrics.append(
        Metric(
            key: "sqlite_write_vs_raw_sqlite",
            what:
                "write through SQLiteStore (safe against kill -9, checkpoints included) ÷ raw C-API upsert committed alone (WAL, synchronous=NORMAL), 100 keys; baseline in ns",
            baseline: sqliteWrites.raw, value: sqliteWrites.prefs / sqliteWrites.raw, unit: "ratio",
            goal: .atMost(0.10)))

    progress("1 KB values")
    let kilobyte = try workloads.oneKilobyteValues()
    metrics.append(
        Metric(
            key: "sqlite_write_1kb_vs_raw_sqlite",
            what:
                "a 1 KB string written over 10,000 keys ÷ a raw upsert of 1 KB committed alone; baseline in ns",
            baseline: kilobyte.raw, value: kilobyte.prefs / kilobyte.raw, unit: "ratio", goal: .atMost(0.2)))
    metrics.append(
        Metric(
            key: "sqlite_file_vs_data_1kb",
            what: "the SQLite file holding 10,000 values of 1 KB ÷ 10,000 KB",
            baseline: nil, value: kilobyte.fileRatio, unit: "ratio", goal: .atMost(1.5)))

    progress("power-safe writes")
    let powerSafe = try workloads.powerSafeAgainstRawFull()
    metrics.append(
        Metric(
            key: "powersafe_vs_raw_full",
            what: "a .powerSafe write ÷ a raw upsert committed with synchronous=FULL; baseline in ns",
            baseline: powerSafe.raw, value: powerSafe.prefs / powerSafe.raw, unit: "ratio", goal: .atMost(1.0)
        ))

    progress("write time against keys stored")
    var plotPoints: [(keys: Int, foundation: Double, sqlite: Double)] = []
    for keys in sizes.plotSizes {
        progress("  \(keys) keys")
        plotPoints.append(
            (
                keys, workloads.foundationWrite(withKeysStored: keys),
                try workloads.sqliteWrite(withKeysStored: keys)
            ))
    }
    let small = plotPoints.first { $0.keys == 100 }!
    let large = plotPoints.first { $0.keys == sizes.growthLarge }!
    let tenThousand = plotPoints.first { $0.keys == 10_000 }!
    metrics.append(
        Metric(
            key: "sqlite_write_growth",
            what:
                "SQLiteStore write time with \(sizes.growthLarge) keys stored ÷ with 100; baseline = ns at 100 keys",
            baseline: small.sqlite, value: large.sqlite / small.sqlite, unit: "ratio", goal: .atMost(1.5)))
    metrics.append(
        Metric(
            key: "foundation_write_growth",
            what:
                "UserDefaults set + synchronize() with \(sizes.growthLarge) keys ÷ with 100; baseline = ns at 100 keys",
            baseline: small.foundation, value: large.foundation / small.foundation, unit: "ratio", goal: nil))
    metrics.append(
        Metric(
            key: "foundation_vs_sqlite_write",
            what:
                "UserDefaults set + synchronize() ÷ SQLiteStore durable write, both at 10,000 keys; baseline = SQLite ns",
            baseline: tenThousand.sqlite, value: tenThousand.foundation / tenThousand.sqlite, unit: "ratio",
            goal: nil))

    progress("4 processes writing one SQLite file")
    let fourWriters = try Processes.fourWriters(writes: 1_000, repetitions: sizes.repetitions)
    metrics.append(
        Metric(
            key: "multiprocess_kept_prefs",
            what: "4 processes × 1,000 writes on one SQLite file: fraction kept",
            baseline: nil, value: fourWriters.kept, unit: "fraction", goal: .equals(1)))
    metrics.append(
        Metric(
            key: "multiprocess_time_vs_raw",
            what:
                "the wall time of those 4 processes ÷ the same writes as raw SQLite commits (each kept; median of the repetitions)",
            baseline: nil, value: fourWriters.timeRatio, unit: "ratio", goal: .atMost(0.25)))
    progress("8 processes incrementing one key")
    metrics.append(
        Metric(
            key: "multiprocess_updates_exact",
            what: "8 processes × 500 update { n += 1 } on one file: 1 when n ends at exactly 4,000",
            baseline: nil, value: try Processes.eightIncrementers(), unit: "", goal: .equals(1)))
    progress("reads right after another process's writes")
    metrics.append(
        Metric(
            key: "cross_process_read_after_write",
            what:
                "of 1,000 writes in another process, the fraction a read started after the write returned saw",
            baseline: nil, value: try Processes.readAfterWrite(trials: 1_000), unit: "fraction",
            goal: .equals(1)))
    progress("4 processes writing one UserDefaults suite")
    metrics.append(
        Metric(
            key: "multiprocess_kept_foundation",
            what: "4 processes × 1,000 UserDefaults set + synchronize() on one suite: fraction kept",
            baseline: nil,
            value: try Processes.keptWithFoundation(writes: 1_000), unit: "fraction", goal: nil))

    progress("cross-process latency")
    let latencies = try Processes.crossProcessLatencies(samples: sizes.latencySamples)
    metrics.append(
        Metric(
            key: "cross_process_latency_ms_p50",
            what:
                "a SQLiteStore write in one process until an observer in another sees it (\(latencies.count) samples)",
            baseline: nil, value: Measure.percentile(latencies, 0.5), unit: "ms", goal: nil))
    metrics.append(
        Metric(
            key: "cross_process_latency_ms_p99", what: "the same, 99th percentile", baseline: nil,
            value: Measure.percentile(latencies, 0.99), unit: "ms", goal: .atMost(1)))

    progress("idle cost of 50 open stores")
    let idle = try Processes.idleCost(stores: 50, seconds: quick ? 3 : 10)
    metrics.append(
        Metric(
            key: "idle_cpu_ms_50_stores",
            what:
                "CPU time of a process holding 50 SQLiteStores with observers, idle for 10 s (3 s with --quick)",
            baseline: nil, value: idle.cpuMilliseconds, unit: "ms", goal: .atMost(20)))
    metrics.append(
        Metric(
            key: "idle_wakeups_per_s",
            what: "context switches per second of that process's busiest thread while idle",
            baseline: nil, value: idle.wakeupsPerSecond, unit: "/s", goal: .atMost(1)))

    progress("a store of 100,000 keys")
    let largeStore = try Processes.largeStore(repetitions: sizes.repetitions)
    metrics.append(
        Metric(
            key: "open_ms_100k_keys",
            what:
                "opening a 100,000-key SQLiteStore until its first read (each in another process; the median of the repetitions)",
            baseline: nil, value: largeStore.openMilliseconds, unit: "ms", goal: .atMost(50)))
    metrics.append(
        Metric(
            key: "rss_mb_100k_keys",
            what: "resident memory a 100,000-key SQLiteStore adds to an empty process",
            baseline: nil, value: largeStore.addedMegabytes, unit: "MB", goal: .atMost(25)))

    if let postgresURL {
        #if PREFS_POSTGRESQL
            metrics += try postgresMetrics(url: postgresURL, sizes: sizes, progress: progress)
            if let fleet {
                metrics += try fleetMetrics(
                    url: postgresURL, listeners: fleet, quick: quick, progress: progress)
            }
        #else
            throw BenchError(
                "this prefs-bench was built without PostgreSQL support (on macOS: --traits PostgreSQL)")
        #endif
    }

    if let start = cpuAtStart, let end = MachineCPU.now() {
        metrics.append(
            Metric(
                key: "machine_cpu_steal_percent",
                what:
                    "CPU time the hypervisor gave to others during the run (/proc/stat): above a few percent, figures are noisy",
                baseline: nil, value: end.stealPercent(since: start), unit: "%", goal: nil))
    }

    if json {
        print(Report.json(metrics))
    } else {
        print(Report.table(metrics, repetitions: sizes.repetitions, quick: quick))
    }
    if let plotPath {
        let svg = Plot.svg(points: plotPoints, rawCommit: sqliteWrites.raw)
        try Data(svg.utf8).write(to: URL(fileURLWithPath: plotPath))
        if !json { print("\nchart written to \(plotPath)") }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
    do {
        try Processes.runChild(Array(arguments.dropFirst()))
    } catch {
        FileHandle.standardError.write(Data("prefs-bench child: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

var quick = false
var json = false
var plotPath: String?
var postgresURL: String?
var fleet: Int?
var remaining = arguments[...]
while let argument = remaining.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--json": json = true
    case "--plot":
        guard let path = remaining.popFirst() else {
            FileHandle.standardError.write(Data("prefs-bench: --plot needs a path\n".utf8))
            exit(64)
        }
        plotPath = path
    case "--postgres":
        guard let url = remaining.popFirst() else {
            FileHandle.standardError.write(Data("prefs-bench: --postgres needs a URL\n".utf8))
            exit(64)
        }
        postgresURL = url
    case "--fleet":
        guard let count = remaining.popFirst().flatMap({ Int($0) }), count > 0 else {
            FileHandle.standardError.write(Data("prefs-bench: --fleet needs a number of processes\n".utf8))
            exit(64)
        }
        fleet = count
    case "--help", "-h":
        print("usage: prefs-bench [--quick] [--json] [--plot PATH] [--postgres URL [--fleet N]]")
        exit(0)
    default:
        FileHandle.standardError.write(
            Data(
                "prefs-bench: unknown argument '\(argument)'\nusage: prefs-bench [--quick] [--json] [--plot PATH] [--postgres URL [--fleet N]]\n"
                    .utf8))
        exit(64)
    }
}

// Every UserDefaults suite here is named by an absolute path in the scratch folder, so Foundation
// keeps it there (Foundation on Linux reads XDG_CONFIG_HOME only at launch).
do {
    if fleet != nil && postgresURL == nil {
        throw BenchError("--fleet needs --postgres URL")
    }
    try runBenchmarks(quick: quick, json: json, plotPath: plotPath, postgresURL: postgresURL, fleet: fleet)
    Scratch.remove()
} catch {
    Scratch.remove()
    FileHandle.standardError.write(Data("prefs-bench: \(error)\n".utf8))
    exit(1)
}

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
        ]
    }
#endif
