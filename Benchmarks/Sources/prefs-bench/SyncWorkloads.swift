import Foundation
import Prefs

/// Syncing's figures that need no server: a read through a `SyncedStore` against the same read
/// from its local store alone.
extension Workloads {
    /// A remote that takes everything and has nothing new: the read path never reaches it.
    private final class QuietRemote: SyncRemote {
        var description: String { "QuietRemote" }
        func push(_ entries: [SyncEntry]) throws -> [SyncEntry] { [] }
        func pull(after cursor: PropertyListValue?) throws -> (
            entries: [SyncEntry], cursor: PropertyListValue?
        ) {
            ([], cursor)
        }
        func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
            StoreObservation {}
        }
    }

    /// Typed reads of an `Int` from a `SQLiteStore`, alone and under a `SyncedStore`, in turns.
    func syncedReadAgainstLocal() throws -> Measure.SideBySide {
        let local = try SQLiteStore(path: Scratch.path("synced-read.sqlite"))
        let synced = try SyncedStore(local: local, remote: QuietRemote(), automatically: false)
        try synced.setValue(.integer(7), forKey: "k")
        let key = Preferences.Key<Int>("k", default: 0)
        let alone = Preferences(store: local)
        let through = Preferences(store: synced)
        let reads = sizes.reads / Measure.turnsPerRepetition
        return Measure.sideBySide(
            operations: reads, repetitions: sizes.repetitions * Measure.turnsPerRepetition,
            { for _ in 0..<reads { consume(alone[key]) } },
            { for _ in 0..<reads { consume(through[key]) } })
    }
}

extension Suite {
    static func syncedReads(_ run: inout BenchRun) throws -> [Metric] {
        let reads = try run.workloads.syncedReadAgainstLocal()
        return [
            Metric(
                key: "synced_read_vs_local",
                what:
                    "typed read of an Int through a SyncedStore ÷ the same read from its SQLiteStore alone, in turns; baseline = ns alone",
                baseline: reads.first, value: reads.ratio, unit: "ratio", goal: .atMost(1.1))
        ]
    }
}
