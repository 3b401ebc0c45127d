import Foundation

/// The steps that compare Prefs with LMDB (issue: sustained writes counted whole).
extension Suite {
    /// LMDB, or a line on stderr saying why its figures are missing.
    private static func loadedLMDB(_ run: BenchRun) -> LMDB? {
        switch LMDB.shared {
        case .success(let lmdb): return lmdb
        case .failure(let error):
            run.progress("  \(error)")
            return nil
        }
    }

    static func sustainedAgainstLMDB(_ run: inout BenchRun) throws -> [Metric] {
        guard let lmdb = loadedLMDB(run) else { return [] }
        var metrics: [Metric] = []
        for keys in run.options.quick ? [100, 10_000] : [100, 10_000, 100_000] {
            run.progress("  \(keys) keys")
            let sustained = try run.workloads.sustainedWrites(keys: keys, lmdb: lmdb)
            let name = keys >= 1_000 ? "\(keys / 1_000)k" : "\(keys)"
            metrics += [
                Metric(
                    key: "sustained_write_ns_\(name)_keys",
                    what:
                        "\(run.sizes.writes) writes of an Int to key (i × 7919) mod \(keys), then flush(): wall time ÷ writes, every move into SQLite inside",
                    baseline: nil, value: sustained.prefs, unit: "ns", goal: nil),
                Metric(
                    key: "sustained_write_vs_lmdb_\(name)_keys",
                    what:
                        "that ÷ the same writes to LMDB (MDB_WRITEMAP|MDB_NOSYNC|MDB_NOMETASYNC, a transaction each), in turns; baseline = LMDB ns",
                    baseline: sustained.lmdb, value: sustained.ratio, unit: "ratio", goal: .atMost(1.0)),
                Metric(
                    key: "sustained_write_old_way_ns_\(name)_keys",
                    what:
                        "the same Prefs writes timed the old way: until the last write returned, the flush left out",
                    baseline: nil, value: sustained.prefsWritesOnly, unit: "ns", goal: nil),
                Metric(
                    key: "sustained_write_cpu_vs_lmdb_\(name)_keys",
                    what:
                        "process CPU time (every thread, the background's moves too) per Prefs write ÷ per LMDB write; baseline = LMDB CPU ns",
                    baseline: sustained.lmdbCPU, value: sustained.prefsCPU / sustained.lmdbCPU, unit: "ratio",
                    goal: nil),
                Metric(
                    key: "sqlite_floor_vs_lmdb_\(name)_keys",
                    what:
                        "SQLite's least work to hold the same writes (each key's last value upserted in key order into a table of the store's shape, one statement, one synced transaction per turn) ÷ LMDB's writes, in turns; baseline = LMDB ns",
                    baseline: sustained.lmdb, value: sustained.sqliteFloorRatio, unit: "ratio", goal: nil),
            ]
        }
        return metrics
    }

    static func powerSafeAndReadsAgainstLMDB(_ run: inout BenchRun) throws -> [Metric] {
        guard let lmdb = loadedLMDB(run) else { return [] }
        let powerSafe = try run.workloads.powerSafeAgainstLMDB(lmdb)
        let reads = try run.workloads.readsAgainstLMDB(lmdb)
        return [
            Metric(
                key: "powersafe_vs_lmdb_synced",
                what:
                    "a .powerSafe write ÷ an LMDB write transaction synced at commit (MDB_WRITEMAP), 100 keys, in turns; baseline = LMDB ns",
                baseline: powerSafe.first, value: powerSafe.ratio, unit: "ratio", goal: .atMost(1.0)),
            Metric(
                key: "read_vs_lmdb_get",
                what:
                    "a typed Int read from SQLiteStore ÷ mdb_get in a read transaction (renewed per read), in turns; baseline = LMDB ns",
                baseline: reads.first, value: reads.ratio, unit: "ratio", goal: nil),
        ]
    }
}
