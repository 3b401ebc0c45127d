import Foundation

/// What the command line asked for.
struct BenchOptions {
    var quick = false
    var json = false
    /// Runs only the steps whose names contain this text (to look at one workload).
    var only: String?
    var plotPath: String?
    var postgresURL: String?
    var fleet: Int?
}

/// One run of the suite: its options, its workloads, and what a step leaves for the chart.
struct BenchRun {
    let options: BenchOptions
    let sizes: Sizes
    let workloads: Workloads
    /// Write times against keys stored, for the chart (filled by the growth step).
    var plotPoints: [(keys: Int, foundation: Double, sqlite: Double)] = []
    /// A raw SQLite commit, the chart's reference line (filled by the raw-write step).
    var rawCommitNanoseconds: Double?
    /// Checkpoint CPU per write moved, by keys stored (filled by the growth step).
    var checkpointCost: [Int: Double] = [:]

    init(options: BenchOptions) {
        self.options = options
        sizes = options.quick ? Sizes.quick : Sizes.full
        workloads = Workloads(sizes: sizes)
    }

    /// Says on stderr which step runs (not with `--json`, whose output is read by programs).
    func progress(_ text: String) {
        if !options.json { FileHandle.standardError.write(Data("… \(text)\n".utf8)) }
    }
}

/// One named step of the benchmark and the figures it reports.
struct BenchStep {
    let name: String
    let measure: (inout BenchRun) throws -> [Metric]
}

/// The benchmark's workloads, in the order they run and report.
enum Suite {
    /// Every step, with the PostgreSQL ones when a server was given.
    static func steps(postgres: Bool, fleet: Bool) -> [BenchStep] {
        var steps = [
            BenchStep(name: "reads through UserDefaultsStore", measure: readsThroughUserDefaults),
            BenchStep(name: "writes through UserDefaultsStore", measure: writesThroughUserDefaults),
            BenchStep(name: "SQLite reads", measure: sqliteReads),
            BenchStep(name: "SQLite writes against raw SQLite", measure: sqliteWritesAgainstRaw),
            BenchStep(name: "1 KB values", measure: kilobyteValues),
            BenchStep(name: "power-safe writes", measure: powerSafeWrites),
            BenchStep(name: "write time against keys stored", measure: writeGrowth),
            BenchStep(name: "sustained writes against LMDB", measure: sustainedAgainstLMDB),
            BenchStep(
                name: "power-safe writes and reads against LMDB", measure: powerSafeAndReadsAgainstLMDB),
            BenchStep(name: "4 processes writing one SQLite file", measure: fourWriters),
            BenchStep(name: "8 processes incrementing one key", measure: eightIncrementers),
            BenchStep(name: "reads right after another process's writes", measure: readAfterWrite),
            BenchStep(name: "4 processes writing one UserDefaults suite", measure: foundationWriters),
            BenchStep(name: "cross-process latency", measure: crossProcessLatency),
            BenchStep(name: "idle cost of 50 open stores", measure: idleCost),
            BenchStep(name: "a store of 100,000 keys", measure: largeStore),
            BenchStep(name: "publishing 1,000 key descriptions", measure: publishing),
            BenchStep(name: "synced reads", measure: syncedReads),
            BenchStep(name: "secret reads", measure: secretReads),
        ]
        if postgres { steps.append(BenchStep(name: "PostgreSQL", measure: postgresSteps)) }
        if postgres && fleet { steps.append(BenchStep(name: "PostgreSQL fleet", measure: fleetSteps)) }
        return steps
    }

    private static func readsThroughUserDefaults(_ run: inout BenchRun) -> [Metric] {
        let reads = run.workloads.readOverheadUserDefaults()
        return [
            Metric(
                key: "read_overhead_userdefaults",
                what:
                    "typed read via Preferences on UserDefaultsStore ÷ plain UserDefaults string/integer/double(forKey:); ns per read",
                baseline: reads.first, value: reads.ratio, unit: "ratio", goal: .atMost(1.10))
        ]
    }

    private static func writesThroughUserDefaults(_ run: inout BenchRun) -> [Metric] {
        let writes = run.workloads.writeOverheadUserDefaults()
        return [
            Metric(
                key: "write_overhead_userdefaults",
                what:
                    "typed write ÷ plain UserDefaults.set, no synchronize on either side; baseline in ns per write",
                baseline: writes.first, value: writes.ratio, unit: "ratio", goal: .atMost(1.10)
            )
        ]
    }

    private static func sqliteReads(_ run: inout BenchRun) throws -> [Metric] {
        let reads = try run.workloads.sqliteReadNanoseconds()
        return [
            Metric(
                key: "sqlite_read_ns", what: "typed read of an Int from SQLiteStore (from its read slots)",
                baseline: nil, value: reads.integerAndString.first, unit: "ns", goal: .atMost(30)),
            Metric(
                key: "sqlite_read_string_ns",
                what:
                    "typed read of a short String (up to 15 UTF-8 bytes) from SQLiteStore (from its read slots)",
                baseline: nil, value: reads.integerAndString.second, unit: "ns", goal: nil),
            Metric(
                key: "sqlite_read_string_vs_int", what: "that String read ÷ the Int read; baseline = Int ns",
                baseline: reads.integerAndString.first, value: reads.integerAndString.ratio, unit: "ratio",
                goal: .atMost(1.5)),
            Metric(
                key: "sqlite_read_long_string_ns",
                what: "typed read of a 34-byte String (under the cache's lock)",
                baseline: nil, value: reads.longString, unit: "ns", goal: nil),
            Metric(
                key: "sqlite_read_default_ns",
                what: "typed read of an Int key with nothing stored: its default (from its read slot)",
                baseline: nil, value: reads.missing, unit: "ns", goal: nil),
        ]
    }

    private static func sqliteWritesAgainstRaw(_ run: inout BenchRun) throws -> [Metric] {
        let writes = try run.workloads.sqliteWriteAgainstRaw()
        run.rawCommitNanoseconds = writes.first
        return [
            Metric(
                key: "sqlite_write_vs_raw_sqlite",
                what:
                    "write through SQLiteStore (safe against kill -9, checkpoints included) ÷ raw C-API upsert committed alone (WAL, synchronous=NORMAL), 100 keys, the two in turns; baseline in ns",
                baseline: writes.first, value: writes.ratio, unit: "ratio", goal: .atMost(0.05))
        ]
    }

    private static func kilobyteValues(_ run: inout BenchRun) throws -> [Metric] {
        let kilobyte = try run.workloads.oneKilobyteValues()
        return [
            Metric(
                key: "sqlite_write_1kb_vs_raw_sqlite",
                what:
                    "a 1 KB string written over 10,000 keys ÷ a raw upsert of 1 KB committed alone; baseline in ns",
                baseline: kilobyte.raw, value: kilobyte.prefs / kilobyte.raw, unit: "ratio",
                goal: .atMost(0.2)),
            Metric(
                key: "sqlite_file_vs_data_1kb",
                what: "the SQLite file holding 10,000 values of 1 KB ÷ 10,000 KB",
                baseline: nil, value: kilobyte.fileRatio, unit: "ratio", goal: .atMost(1.5)),
        ]
    }

    private static func powerSafeWrites(_ run: inout BenchRun) throws -> [Metric] {
        let powerSafe = try run.workloads.powerSafeAgainstRawFull()
        return [
            Metric(
                key: "powersafe_vs_raw_full",
                what:
                    "a .powerSafe write ÷ a raw upsert committed with synchronous=FULL, in turns; baseline in ns",
                baseline: powerSafe.first, value: powerSafe.ratio, unit: "ratio",
                goal: .atMost(1.0))
        ]
    }

    private static func writeGrowth(_ run: inout BenchRun) throws -> [Metric] {
        for keys in run.sizes.plotSizes {
            run.progress("  \(keys) keys")
            let foundation = run.workloads.foundationWrite(withKeysStored: keys)
            let sqlite = try run.workloads.sqliteWriteAndCheckpoints(withKeysStored: keys)
            run.plotPoints.append((keys, foundation, sqlite.write))
            run.checkpointCost[keys] = sqlite.checkpointPerWrite
        }
        let large = run.sizes.growthLarge
        let small = run.plotPoints.first { $0.keys == 100 }!
        let largest = run.plotPoints.first { $0.keys == large }!
        let tenThousand = run.plotPoints.first { $0.keys == 10_000 }!
        // The ratios from stores measured side by side: the plot's points are minutes apart, on a
        // machine whose speed changes over seconds (their ratio moved by a third between runs).
        run.progress("  100 against \(large) keys, side by side")
        let growth = try run.workloads.sqliteWriteSideBySide(withKeysStored: large)
        run.progress("  100 against 10000 keys, side by side")
        let tenThousandGrowth = try run.workloads.sqliteWriteSideBySide(withKeysStored: 10_000)
        return [
            Metric(
                key: "sqlite_write_growth",
                what:
                    "SQLiteStore write time with \(large) keys stored ÷ with 100, the two stores written in turns; baseline = ns at 100 keys",
                baseline: growth.first, value: growth.ratio, unit: "ratio",
                goal: .atMost(1.1)),
            Metric(
                key: "checkpoint_cpu_ns_per_write_100_keys",
                what:
                    "CPU time off the writing thread (the moves into SQLite, in the background and in the closing flush(); wake-ups) ÷ the writes, 100 keys stored",
                baseline: nil, value: run.checkpointCost[100] ?? .nan, unit: "ns", goal: nil),
            Metric(
                key: "checkpoint_cpu_ns_per_write_\(large / 1000)k_keys",
                what: "the same with \(large) keys stored",
                baseline: nil, value: run.checkpointCost[large] ?? .nan, unit: "ns", goal: nil),
            Metric(
                key: "sqlite_write_10k_vs_100",
                what:
                    "SQLiteStore write time with 10,000 keys stored ÷ with 100, the two stores written in turns; baseline = ns at 100 keys",
                baseline: tenThousandGrowth.first, value: tenThousandGrowth.ratio,
                unit: "ratio", goal: .atMost(1.1)),
            Metric(
                key: "foundation_write_growth",
                what:
                    "UserDefaults set + synchronize() with \(large) keys ÷ with 100; baseline = ns at 100 keys",
                baseline: small.foundation, value: largest.foundation / small.foundation, unit: "ratio",
                goal: nil),
            Metric(
                key: "foundation_vs_sqlite_write",
                what:
                    "UserDefaults set + synchronize() ÷ SQLiteStore durable write, both at 10,000 keys; baseline = SQLite ns",
                baseline: tenThousand.sqlite, value: tenThousand.foundation / tenThousand.sqlite,
                unit: "ratio",
                goal: nil),
        ]
    }

    private static func fourWriters(_ run: inout BenchRun) throws -> [Metric] {
        let lmdb = try? LMDB.shared.get()
        let writers = try Processes.fourWriters(writes: 1_000, repetitions: run.sizes.repetitions, lmdb: lmdb)
        var metrics = [
            Metric(
                key: "multiprocess_kept_prefs",
                what: "4 processes × 1,000 writes on one SQLite file: fraction kept",
                baseline: nil, value: writers.kept, unit: "fraction", goal: .equals(1)),
            Metric(
                key: "multiprocess_time_vs_raw",
                what:
                    "the wall time of those 4 processes ÷ the same writes as raw SQLite commits (each kept; median of the repetitions)",
                baseline: nil, value: writers.timeRatio, unit: "ratio", goal: .atMost(0.08)),
        ]
        if let ratio = writers.lmdbRatio, let kept = writers.lmdbKept {
            metrics += [
                Metric(
                    key: "multiprocess_time_vs_lmdb",
                    what:
                        "the wall time of those 4 processes ÷ the same writes to one LMDB environment, a write transaction each (unsynced)",
                    baseline: nil, value: ratio, unit: "ratio", goal: .atMost(1.0)),
                Metric(
                    key: "multiprocess_kept_lmdb",
                    what: "the LMDB run: fraction of its writes found afterwards",
                    baseline: nil, value: kept, unit: "fraction", goal: .equals(1)),
            ]
        }
        return metrics
    }

    private static func eightIncrementers(_ run: inout BenchRun) throws -> [Metric] {
        [
            Metric(
                key: "multiprocess_updates_exact",
                what: "8 processes × 500 update { n += 1 } on one file: 1 when n ends at exactly 4,000",
                baseline: nil, value: try Processes.eightIncrementers(), unit: "", goal: .equals(1))
        ]
    }

    private static func readAfterWrite(_ run: inout BenchRun) throws -> [Metric] {
        [
            Metric(
                key: "cross_process_read_after_write",
                what:
                    "of 1,000 writes in another process, the fraction a read started after the write returned saw",
                baseline: nil, value: try Processes.readAfterWrite(trials: 1_000), unit: "fraction",
                goal: .equals(1))
        ]
    }

    private static func foundationWriters(_ run: inout BenchRun) throws -> [Metric] {
        [
            Metric(
                key: "multiprocess_kept_foundation",
                what: "4 processes × 1,000 UserDefaults set + synchronize() on one suite: fraction kept",
                baseline: nil, value: try Processes.keptWithFoundation(writes: 1_000), unit: "fraction",
                goal: nil)
        ]
    }

    private static func crossProcessLatency(_ run: inout BenchRun) throws -> [Metric] {
        let latencies = try Processes.crossProcessLatencies(samples: run.sizes.latencySamples)
        return [
            Metric(
                key: "cross_process_latency_ms_p50",
                what:
                    "a SQLiteStore write in one process until an observer in another sees it (\(latencies.count) samples)",
                baseline: nil, value: Measure.percentile(latencies, 0.5), unit: "ms", goal: nil),
            Metric(
                key: "cross_process_latency_ms_p99", what: "the same, 99th percentile", baseline: nil,
                value: Measure.percentile(latencies, 0.99), unit: "ms", goal: .atMost(1)),
        ]
    }

    private static func idleCost(_ run: inout BenchRun) throws -> [Metric] {
        let idle = try Processes.idleCost(stores: 50, seconds: run.options.quick ? 3 : 10)
        return [
            Metric(
                key: "idle_cpu_ms_50_stores",
                what:
                    "CPU time of a process holding 50 SQLiteStores with observers, idle for 10 s (3 s with --quick)",
                baseline: nil, value: idle.cpuMilliseconds, unit: "ms", goal: .atMost(20)),
            Metric(
                key: "idle_wakeups_per_s",
                what: "context switches per second of that process's busiest thread while idle",
                baseline: nil, value: idle.wakeupsPerSecond, unit: "/s", goal: .atMost(1)),
        ]
    }

    private static func largeStore(_ run: inout BenchRun) throws -> [Metric] {
        let store = try Processes.largeStore(repetitions: run.sizes.repetitions)
        return [
            Metric(
                key: "open_ms_100k_keys",
                what:
                    "opening a 100,000-key SQLiteStore until its first read (each in another process; the median of the repetitions)",
                baseline: nil, value: store.openMilliseconds, unit: "ms", goal: .atMost(50)),
            Metric(
                key: "rss_mb_100k_keys",
                what: "resident memory a 100,000-key SQLiteStore adds to an empty process",
                baseline: nil, value: store.addedMegabytes, unit: "MB", goal: .atMost(25)),
            Metric(
                key: "rss_mb_100k_keys_after_reading_all",
                what:
                    "the same after a typed read of every value ÷ after opening; baseline = MB after reading",
                baseline: store.afterReadingAllMegabytes,
                value: store.afterReadingAllMegabytes / store.addedMegabytes,
                unit: "ratio", goal: .atMost(1.2)),
        ]
    }

    private static func publishing(_ run: inout BenchRun) throws -> [Metric] {
        let publish = try run.workloads.publishingDescriptions()
        return [
            Metric(
                key: "publish_1000_keys_first_ms",
                what: "publishing 1,000 key descriptions to a new SQLite store",
                baseline: nil, value: publish.first / 1e6, unit: "ms", goal: nil),
            Metric(
                key: "publish_1000_keys_again_vs_raw_commit",
                what:
                    "publishing the same 1,000 descriptions again (a later launch: nothing written) ÷ one raw SQLite commit; baseline in ns",
                baseline: publish.raw, value: publish.again / publish.raw, unit: "ratio", goal: nil),
        ]
    }

    private static func postgresSteps(_ run: inout BenchRun) throws -> [Metric] {
        #if PREFS_POSTGRESQL
            try postgresMetrics(url: run.options.postgresURL!, sizes: run.sizes, progress: run.progress)
        #else
            throw BenchError(
                "this prefs-bench was built without PostgreSQL support (on macOS: --traits PostgreSQL)")
        #endif
    }

    private static func fleetSteps(_ run: inout BenchRun) throws -> [Metric] {
        #if PREFS_POSTGRESQL
            try fleetMetrics(
                url: run.options.postgresURL!, listeners: run.options.fleet!, quick: run.options.quick,
                progress: run.progress)
        #else
            throw BenchError(
                "this prefs-bench was built without PostgreSQL support (on macOS: --traits PostgreSQL)")
        #endif
    }
}
