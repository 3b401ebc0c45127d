import Foundation
import PrefsModel

/// Moving a `UserDefaults` domain in: the values and the mark that says it was done, in one
/// SQLite transaction.
extension SQLiteStoreCore {
    /// What a move-in did: the keys copied and the keys the store already had (kept).
    package struct MoveInOutcome: Sendable {
        package let copied: [String]
        package let kept: [String]
    }

    /// Copies `values` for the keys the store does not have, and the mark `marker`, in one
    /// SQLite transaction; `nil` when the mark is there already (nothing is done).
    ///
    /// All or nothing, even against `kill -9`: a process killed before the commit leaves neither
    /// the values nor the mark, one killed after it leaves both. Holding this process's writer
    /// lock, SQLite's write lock and the journal's lock (no write anywhere in between), the
    /// journal's records are moved in first, the values get one new sequence number after them,
    /// and the journal is then emptied: every store catches up from SQLite, as after a checkpoint.
    package func moveIn(_ values: [StoreKey: PropertyListValue], marker: String) throws -> MoveInOutcome? {
        guard let journal, journal.isWritable else {
            throw StoreError(path: path, kind: .readOnly, detail: "the store was opened read-only")
        }
        // Every value within a value's limit, before anything changes, as every write checks:
        // a domain `UserDefaults` took may hold a larger one, or many references to one large
        // value whose encoding (each copy written out) a 32-bit `Int` cannot count.
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            try value.checkStorable(key: key.name, store: path)
        }
        // Inside the system's background time: it runs at launch, holding SQLite's write lock and
        // the journal's through a commit that syncs, and an app suspended holding them in an App
        // Group container is ended. Taken back before the commit, nothing is copied.
        let outcome = ExpiringActivity.runAndWaitForResult(
            "copying values into \(path)", system: options.faults.expiringActivity
        ) { expiry in try self.moveIn(values, marker: marker, journal, expiry: expiry) }
        guard let outcome else {
            throw StoreError(
                path: path, kind: .expired,
                detail: "the system gave no background time to copy the values in; nothing was copied")
        }
        return try outcome.get()
    }

    private func moveIn(
        _ values: [StoreKey: PropertyListValue], marker: String, _ journal: Journal,
        expiry: ExpiringActivity.Expiry
    ) throws -> MoveInOutcome? {
        let giveUp = { expiry.isExpired }
        let (outcome, wake) = try withWriter(expiry: expiry) { writer in
            try fileCheck.verify(&writer.looks)
            return try sqlite.withDatabase(during: "moveIn", expiry: expiry) { database in
                let connection = database.connection
                try sqlite.perform {
                    // This loop's waits, not SQLite's busy handler: they end at the expiry.
                    connection.setBusyTimeout(milliseconds: 0)
                    defer { connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds) }
                    try connection.retryingWhileBusy(timeout: options.busyTimeout, givingUpWhen: giveUp) {
                        try connection.run("BEGIN IMMEDIATE")
                    }
                }
                do {
                    return try journal.withLock(timeout: options.busyTimeout, expiry: expiry) { locked in
                        try moveInHoldingLocks(
                            values, marker: marker, journal, locked, connection, expiry: expiry)
                    }
                } catch {
                    try? connection.run("ROLLBACK")
                    throw expiry.isExpired
                        ? StoreError(
                            path: path, kind: .expired, detail: "copying the values in; nothing was copied")
                        : error
                }
            }
        }
        if wake { journal.wakeWatchers() }
        catchUp()  // the values, from SQLite (the journal no longer holds what came before them)
        return outcome
    }

    /// Whether a move-in left `marker` in the file (the store's domain was moved in before).
    package func hasMovedIn(marker: String) throws -> Bool {
        try sqlite.withDatabase(during: "moveIn") { database in
            try sqlite.perform {
                try database.connection.integer("SELECT 1 FROM prefs_meta WHERE name = ?1", [.text(marker)])
                    != nil
            }
        }
    }

    private func moveInHoldingLocks(
        _ values: [StoreKey: PropertyListValue], marker: String, _ journal: Journal,
        _ locked: Journal.LockHeld,
        _ connection: SQLiteConnection, expiry: ExpiringActivity.Expiry
    ) throws -> (MoveInOutcome?, wake: Bool) {
        let isMarked = try sqlite.perform {
            try connection.integer("SELECT 1 FROM prefs_meta WHERE name = ?1", [.text(marker)]) != nil
        }
        if isMarked {
            try sqlite.perform { try connection.run("ROLLBACK") }
            return (nil, false)
        }
        let checkpointed = try sqlite.perform { try StoreConnection.checkpointedSequence(connection) }
        let moved = try checkpointer.upsertRecords(
            of: journal, after: checkpointed, upTo: (journal.writeOffset, journal.generation),
            into: connection, expiry: expiry)
        let highest = max(journal.sequence, moved, checkpointed)
        // A damaged or edited file's number (-1 read as `UInt64.max`) would overflow here.
        guard highest < Journal.Layout.sequenceLimit else {
            throw StoreError(
                path: path, kind: .corrupt,
                detail: "the store's sequence numbers are used up (\(highest) in the file)")
        }
        let sequence = highest + 1
        var copied: [String] = []
        var kept: [String] = []
        var listed = StoreConnection.MovedKeys()
        try sqlite.perform {
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                let stored = try connection.integer(
                    "SELECT 1 FROM prefs_entries WHERE key = ?1 AND value IS NOT NULL", [.text(key.name)])
                if stored != nil {
                    kept.append(key.name)
                    continue
                }
                try StoreConnection.upsert(
                    key, .blob(Data(value.storedEncoding())), sequence: sequence, into: connection)
                copied.append(key.name)
                listed.add(key.name)
            }
            try StoreConnection.list(listed, batch: sequence, in: connection)
            try connection.run(
                "INSERT INTO prefs_meta(name, value) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
                [.text(marker), .text(ISO8601DateFormatter().string(from: Date()))])
            try StoreConnection.setCheckpointedSequence(
                sequence, after: max(moved, checkpointed), in: connection)
        }
        options.faults.atCheckpointStep?(.beforeCommit)
        if expiry.isExpired {
            throw StoreError(path: path, kind: .expired, detail: "before the commit; nothing was copied")
        }
        try sqlite.perform { try connection.run("COMMIT") }
        options.faults.atCheckpointStep?(.afterCommit)
        journal.dropEverything(through: sequence, locked: locked)
        return (MoveInOutcome(copied: copied, kept: kept), journal.announce(locked: locked))
    }
}
