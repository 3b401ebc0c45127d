import CPrefsShared
import Dispatch
import Foundation
import PrefsJournal

/// Reading: the cache, kept current with the journal (and with SQLite when the journal no
/// longer holds what the cache misses).
extension SQLiteStoreCore {
    // MARK: - Reading

    /// The value under `key`, current with every write made before this call: a plain value read
    /// lately is one load of the journal's sequence number and a look at its slot (see
    /// ``ReadSlots``); anything else is the cache's lock and that same load when nothing changed.
    func value(for key: StoreKey) -> PropertyListValue? {
        guard let journalSequence else { return read { $0.values.value(for: key) } }
        var name = key.name
        return name.withUTF8 { bytes in
            let hash = KeyTable.hash(bytes, seed: readSlots.seed)
            let sequence = prefs_atomic_load64(journalSequence)
            if let answer = readSlots.value(hash: hash, key: bytes, journalSequence: sequence) {
                return answer
            }
            return read { cache in
                let value = cache.values.value(for: key, hash: hash)
                readSlots.fill(hash: hash, key: bytes, value: value, position: cache.position.sequence)
                return value
            }
        }
    }

    /// Brings the cache up to date with every record written before this call.
    func catchUp() { read { _ in } }

    /// Runs `body` on the cache once it holds every record written before this call.
    func read<Result>(_ body: (inout SQLiteStore.Cache) -> Result) -> Result {
        // Twice at most: a checkpoint can drop records between a look at SQLite and the next
        // look at the journal, but not every time; a third failure answers from the cache.
        for _ in 0..<3 {
            let result: Result? = cache.withLock { cache in
                guard let journal, journal.sequence > cache.position.sequence else { return body(&cache) }
                guard catchUpWithoutLock(&cache, journal) != .behind else { return nil }
                return body(&cache)
            }
            if let result { return result }
            // Behind what the journal still holds: the rest is in SQLite.
            do { try catchUpFromSQLite() } catch {
                journal?.report("cannot read the changes from SQLite: \(error)")
                break
            }
        }
        return cache.withLock { body(&$0) }
    }

    /// How a catch-up from the journal ended.
    enum CatchUp {
        /// Every record written before it started is applied.
        case caughtUp
        /// The journal no longer holds every record after the cache's position: read SQLite.
        case behind
        /// The records up to a damaged one are applied; the damage is reported.
        case damaged
    }

    /// Applies the records after the cache's position, reading the journal without its lock.
    func catchUpWithoutLock(_ cache: inout SQLiteStore.Cache, _ journal: Journal) -> CatchUp {
        // Records being moved (an odd generation) is a `memcpy` under the lock, over in
        // microseconds; a holder stopped in the middle of one is repaired only by the next holder
        // of the lock, which a process that only reads never is. So the wait is bounded (about
        // 0.1 s: 1,000 yields, then 1,000 pauses of 100 µs) and the read then goes to SQLite.
        for attempt in 0..<2_000 {
            let generation = journal.generation
            if generation % 2 == 1 {
                if attempt >= 1_000 { usleep(100) } else { sched_yield() }
                continue
            }
            let announced = journal.sequence
            let base = journal.baseSequence
            let end = journal.writeOffset
            guard cache.position.sequence >= base else { return .behind }
            let start =
                cache.position.generation == generation ? cache.position.offset : Journal.Layout.headerSize
            var scan = RecordScan(journal: journal, from: start, to: end, after: 0)
            var records: [JournalRecord] = []
            while let record = scan.next() {
                if record.sequence > cache.position.sequence { records.append(record) }
            }
            prefs_atomic_fence()
            guard journal.generation == generation else { continue }
            if let failure = scan.failure {
                // Stable bytes that are not a record: damage. The next holder of the lock cuts it.
                journal.report("\(failure); reading stops there")
                journal.checkOnNextLock()
            }
            apply(records, to: &cache)
            cache.position = Journal.Position(
                sequence: max(
                    scan.lastSequence, cache.position.sequence, scan.failure == nil ? announced : 0),
                generation: generation, offset: scan.offset)
            return scan.failure == nil ? .caughtUp : .damaged
        }
        return .behind
    }

    /// Applies records to the cache and tells observers, one change per record (in order).
    private func apply(_ records: [JournalRecord], to cache: inout SQLiteStore.Cache) {
        var undecodable: Set<String> = []
        for record in records {
            var change: [StoreKey: ValueChange] = [:]
            for entry in record.entries {
                let key = StoreKey(entry.key)
                guard let encoded = entry.encodedValue else {
                    change[key] = .removed
                    continue
                }
                if let value = try? PropertyListValue(storedEncoding: encoded) {
                    change[key] = .set(value)
                } else {
                    undecodable.insert(entry.key)
                }
            }
            for (key, value) in change { cache.values[key] = value.newValue }
            observers.publish(StoreChange(values: change))
        }
        SQLiteStore.reportUndecodable(undecodable, in: path, to: options.diagnostics)
    }

    /// Reads what changed from SQLite (the rows changed since the cache's position, up to the
    /// last checkpoint), then the journal's records after that.
    func catchUpFromSQLite() throws {
        try withDatabase(during: "catching up") { database in
            let connection = database.connection
            let known = cache.withLock { $0.position.sequence }
            // Read before SQLite: records up to it were committed to SQLite before it was set.
            let base = journal?.baseSequence ?? 0
            var changed: [StoreKey: PropertyListValue?] = [:]
            var undecodable: [String] = []
            var highest = known
            try perform {
                try connection.execute("BEGIN")
                defer { try? connection.execute("COMMIT") }
                database.dataVersion = try connection.integer("PRAGMA data_version") ?? 0
                highest = max(highest, try Self.checkpointedSequence(connection))
                try connection.run(
                    "SELECT key, value, seq FROM prefs_entries WHERE seq > ?1",
                    [.integer(Int64(bitPattern: known))]
                ) { row in
                    let key = StoreKey(row.text(0))
                    highest = max(highest, UInt64(bitPattern: row.integer(2)))
                    if row.isNull(1) {
                        changed[key] = .some(nil)
                    } else if let value = try? PropertyListValue(storedEncodingBytes: row.blobBytes(1)) {
                        changed[key] = .some(value)
                    } else {
                        undecodable.append(key.name)
                    }
                }
            }
            SQLiteStore.reportUndecodable(undecodable, in: path, to: options.diagnostics)
            if highest < base {
                // SQLite lacks records the journal dropped: a power loss undid the checkpoint's
                // commit (or the journal belongs to another copy of the database).
                journal?.report(
                    "the records after \(highest) up to \(base) are in neither the journal nor SQLite; continuing from \(base)"
                )
                highest = base
            }
            cache.withLock { cache in
                // Only when nobody moved the cache meanwhile (then this read is not the newest).
                guard cache.position.sequence == known else { return }
                for (key, value) in changed { cache.values[key] = value }
                cache.position = Journal.Position(
                    sequence: highest, generation: .max, offset: Journal.Layout.headerSize)
                observers.publish(StoreChange(newValues: changed))
            }
        }
    }

    /// The sequence number up to which SQLite holds every record (0 for a file without one).
    static func checkpointedSequence(_ connection: SQLiteConnection) throws -> UInt64 {
        let stored = try connection.integer(
            "SELECT value FROM prefs_meta WHERE name = 'checkpointed_sequence'")
        return UInt64(bitPattern: stored ?? 0)
    }

    /// Reads what other stores wrote (called by the watch).
    ///
    /// Returns whether there was anything new.
    func lookForChanges() -> Bool {
        guard let journal else {
            // No journal: SQLite's `data_version` says whether another connection committed.
            let moved =
                (try? withDatabase(during: "a refresh") { database in
                    try perform { try database.connection.integer("PRAGMA data_version") }
                        != database.dataVersion
                }) ?? false
            if moved { try? catchUpFromSQLite() }
            return moved
        }
        let before = cache.withLock { $0.position.sequence }
        guard journal.sequence > before else { return false }
        return read { $0.position.sequence } > before
    }
}
