import CPrefsShared
import Dispatch
import Foundation
import PrefsModel

/// Reading: the cache, kept current with the journal (and with SQLite when the journal no
/// longer holds what the cache misses).
extension SQLiteStoreCore {
    // MARK: - Reading

    /// The value under `key`, current with every write made before this call: a plain value read
    /// lately is one load of the journal's sequence number and a look at its slot (see
    /// ``ReadSlots``); anything else is the cache's lock and that same load when nothing changed.
    package func value(for key: StoreKey) -> PropertyListValue? { lookUp(key).value }

    /// What ``value(for:)`` reads, as it found it: a read slot's words, or the cache's value
    /// (which then fills the slot for the next read).
    package func lookUp(_ key: StoreKey) -> StoredRead {
        guard let journalSequence = cache.journalSequence,
            prefs_atomic_load(UnsafeMutablePointer(mutating: cache.mappingFaulted!)) == 0
        else {
            return .cache(read { $0.values.value(for: key) })
        }
        var name = key.name
        return name.withUTF8 { bytes in
            let slots = cache.slotReader  // plain values: nothing retained
            let hash = KeyTable.hash(bytes, seed: slots.seed)
            if let answer = slots.answer(
                hash: hash, key: bytes, journalSequence: prefs_atomic_load64(journalSequence))
            {
                return .slot(answer)
            }
            return .cache(
                read { cache in
                    let value = cache.values.value(for: key, hash: hash)
                    self.cache.readSlots.fill(
                        hash: hash, key: bytes, value: value, position: cache.position.sequence)
                    return value
                })
        }
    }

    /// Brings the cache up to date with every record written before this call.
    package func catchUp() { read { _ in } }

    /// The value under `key` as ``value(for:)`` reads it; with `expiry`, a look at SQLite the
    /// system cuts short answers from the cache as it is.
    package func value(for key: StoreKey, expiry: ExpiringActivity.Expiry) -> PropertyListValue? {
        read(expiry: expiry) { $0.values.value(for: key) }
    }

    /// Every stored key and its value, once the cache holds every record written before this call.
    ///
    /// With `expiry` (in the system's background time), a look at SQLite the system cuts short
    /// answers from the cache as it is.
    package func snapshot(expiry: ExpiringActivity.Expiry? = nil) -> [StoreKey: PropertyListValue] {
        read(expiry: expiry) { $0.values.dictionary }
    }

    /// Every stored key's name, as ``snapshot()`` sees them.
    package func keys() -> [String] { read { $0.values.names } }

    /// Runs `body` on the cache once it holds every record written before this call.
    ///
    /// With `expiry` (the watch, in the system's background time), a look at SQLite that the
    /// system cuts short answers from the cache as it is; the next look catches up.
    func read<Result>(
        expiry: ExpiringActivity.Expiry? = nil, _ body: (inout StoreEngine.Cache) -> Result
    ) -> Result {
        // Twice at most: a checkpoint can drop records between a look at SQLite and the next
        // look at the journal, but not every time; a third failure answers from the cache.
        for _ in 0..<3 {
            let result: Result? = cache.withLock { cache in
                // Locked-away data mapped again once readable: a store that only reads is never
                // the writer that would (its header would read as zeros until then).
                guard let journal, journal.isReadable(), journal.sequence > cache.position.sequence else {
                    return body(&cache)
                }
                guard self.cache.catchUp(&cache) != .behind else { return nil }
                return body(&cache)
            }
            if let result { return result }
            // Behind what the journal still holds: the rest is in SQLite.
            do { try catchUpFromSQLite(expiry: expiry) } catch let error as StoreError
                where error.kind == .expired
            {
                break
            } catch {
                journal?.report("cannot read the changes from SQLite: \(error)")
                break
            }
        }
        return cache.withLock { body(&$0) }
    }

    /// Reads what changed from SQLite (the rows changed since the cache's position, up to the
    /// last checkpoint), then the journal's records after that.
    ///
    /// SQLite behind the journal's base means lost records (a power loss undid a checkpoint), or,
    /// for a store that only reads, a snapshot older than the one committed: where SQLite cannot
    /// make its `-shm` file (a read-only mount once the writers closed), the connection is
    /// immutable and reads the database file alone, which lacks a checkpoint still in the WAL
    /// until the writer's connection closes (seen once, a moment after a writer's flush). Such a
    /// store reads again, on a fresh connection, a few times before the records between are said
    /// to be lost: taken as lost, they would stay missing from its cache until the keys changed.
    ///
    /// With `expiry`, every wait (for the connection, for another connection's lock, between
    /// attempts) ends as soon as the system asks for its background time back, throwing `.expired`:
    /// the expiry call waits for this look, and the app must not be suspended holding SQLite's locks.
    func catchUpFromSQLite(expiry: ExpiringActivity.Expiry? = nil) throws {
        for attempt in 0...Self.olderSnapshotRetries {
            if expiry?.isExpired == true {
                throw StoreError(path: path, kind: .expired, detail: "before reading SQLite")
            }
            let adopted = try sqlite.withDatabase(during: "catching up", expiry: expiry) { database in
                let known = cache.position
                // Read before SQLite: records up to it were committed to SQLite before it was set.
                let base = journal?.baseSequence ?? 0
                let rows = try readChangedRows(after: known, in: &database, expiry: expiry)
                let older = rows.highest < base && journal?.isWritable == false
                if older && attempt < Self.olderSnapshotRetries { return false }
                cache.adopt(rows, ifStillAt: known, base: base)
                return true
            }
            if adopted { return }
            // Outside the connection's lock; a store that only reads holds no connection between
            // uses, so the next attempt opens a fresh one.
            usleep(Self.olderSnapshotPause)
        }
    }

    /// How often, and how many microseconds apart, a store that only reads reads SQLite again
    /// when it holds less than the journal says it does (see ``catchUpFromSQLite(expiry:)``).
    static let olderSnapshotRetries = 10
    static let olderSnapshotPause: UInt32 = 10_000

    /// SQLite's rows changed after `known` (as a test's fault may make them look).
    private func readChangedRows(
        after known: UInt64, in database: inout StoreEngine.Database, expiry: ExpiringActivity.Expiry?
    ) throws -> StoreConnection.ChangedRows {
        let rows = try sqlite.rowsChanged(after: known, in: &database, expiry: expiry)
        if let seeOlder = options.faults.seeOlderRows, seeOlder() {
            return StoreConnection.ChangedRows(highest: known)
        }
        return rows
    }

    /// Reads what other stores wrote (called by the watch).
    ///
    /// Returns whether there was anything new.
    ///
    /// A look that must read SQLite (a store without a journal; or records another process moved
    /// into SQLite before this one read them) opens a connection, which holds shared locks while
    /// open: it runs inside the system's background time, as checkpoints do, so the app is not
    /// suspended holding them (`0xdead10cc`). Refused, it leaves the catching up to the next read.
    package func lookForChanges() -> Bool {
        watchLooks.add(1)
        let before = cache.position
        guard let journal else {
            // No journal (a file only read): the rows changed since the cache's position. (Not
            // `PRAGMA data_version`, which belongs to one connection, and none is kept open.)
            inBackgroundTime("reading other processes' changes to \(path)") {
                try? $0.catchUpFromSQLite(expiry: $1)
            }
            return cache.position > before
        }
        guard journal.isReadable(), journal.sequence > before else { return false }
        // The journal alone first: no connection, no background time.
        let caughtUp = cache.withLock { cache in
            journal.sequence <= cache.position.sequence || self.cache.catchUp(&cache) != .behind
        }
        if !caughtUp {
            inBackgroundTime("reading other processes' changes to \(path)") {
                _ = $0.read(expiry: $1) { $0.position }
            }
        }
        return cache.position > before
    }

    /// Runs `body` inside the system's background time and waits for it (on the watch's own
    /// thread); skips it when the system refuses the time or takes it back first, and hands
    /// `body` the expiry, at which it must stop waiting for anything.
    private func inBackgroundTime(
        _ reason: String, _ body: @escaping @Sendable (SQLiteStoreCore, ExpiringActivity.Expiry) -> Void
    ) {
        ExpiringActivity.runAndWait(reason, system: options.faults.expiringActivity) { [self] expiry in
            checkpointer.background.during(expiry) {
                if !expiry.isExpired { body(self, expiry) }
            }
        }
    }
}
