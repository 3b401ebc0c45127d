import CPrefsShared
import Dispatch
import Foundation
import PrefsModel
import PrefsSupport

/// Moves a store's journal into SQLite: in the background once the journal grows past
/// ``SQLiteStoreCore/checkpointThreshold``, in line when it is past the limit, on `flush()` and
/// when the store closes.
///
/// Its steps, each a place a test can stop a process at (``StoreEngine/CheckpointStep``): take
/// SQLite's write lock (`BEGIN IMMEDIATE`), drop what an earlier checkpoint committed but did not
/// drop, snapshot the journal's end, upsert each key's last value, commit (`.beforeCommit`,
/// `.afterCommit`), then drop the records moved, keeping those written meanwhile (`.duringMove`,
/// `.afterDrop`). Killed anywhere, nothing is lost or applied twice: SQLite's
/// `checkpointed_sequence` says which records it holds.
///
/// ```swift
/// let checkpointer = store.core.checkpointer
/// try checkpointer.checkpoint()
/// ```
package final class Checkpointer: Sendable {
    private let path: String
    private let options: StoreEngine.Settings
    /// `nil`, or read-only: there is nothing to move.
    private let journal: Journal?
    private let sqlite: StoreConnection
    /// Set while a background checkpoint is queued or running.
    let queued = AtomicWord()
    /// Set while the system refuses background time (cleared when a background checkpoint
    /// runs): a write past the journal's limit then does not move the journal on its own thread.
    let refused = AtomicWord()
    /// Set once a move found SQLite's files locked away (cleared when one succeeds): said once.
    private let toldLocked = AtomicWord()
    /// What checkpoints cost so far: their CPU time on the threads that ran them, and the
    /// records they moved into SQLite (a test waits for a background move by it).
    package let cost = Locked(CheckpointCost())
    /// The background checkpoint running now, which closing the store ends at its next step.
    let background = BackgroundWork()

    init(path: String, options: StoreEngine.Settings, journal: Journal?, sqlite: StoreConnection) {
        self.path = path
        self.options = options
        self.journal = journal
        self.sqlite = sqlite
    }

    /// Says that a move waits for the device to be unlocked: once, until a move succeeds (every
    /// write past the threshold tries again while the device stays locked).
    ///
    /// With `.completeUnlessOpen` the journal, held open, stays usable while the device is
    /// locked, but SQLite's files, closed between calls, cannot be opened again until it is not.
    func tellLocked(_ error: StoreError) {
        guard toldLocked.compareExchange(expected: 0, desired: 1) else { return }
        journal?.report(
            "the journal is moved into SQLite once the device is unlocked (writes go on meanwhile): \(error)")
    }

    /// Queues a checkpoint in the background (one at a time per store).
    func queue() {
        // Every write past the threshold asks, and while a checkpoint runs (all through one of a
        // large store, which moves slower than writers append) the answer is no: a load, not a
        // lock.
        guard queued.loadRelaxed() == 0, queued.compareExchange(expected: 0, desired: 1)
        else { return }
        let retry = options.faults.refusedCheckpointRetry ?? .seconds(1)
        ExpiringActivity.run(
            "moving the journal of \(path) into SQLite", system: options.faults.expiringActivity
        ) {
            [weak self] expiry in
            guard let self else { return }
            refused.store(0)
            defer { self.queued.store(0) }
            do {
                try background.during(expiry) { try checkpoint(expiry: expiry) }
            } catch let error as StoreError where error.kind == .closed || error.kind == .expired {
                return  // the records stay in the journal; the next write queues another
            } catch let error as StoreError where error.kind == .protectedDataUnavailable {
                tellLocked(error)
            } catch {
                // Nothing is lost (the records stay in the journal); the next write tries again.
                journal?.report("moving the journal into SQLite failed, will try again: \(error)")
            }
        } refused: { [weak self] in
            // The system gave no time (the app is in the background): nothing ran, nothing is
            // held. Asked again later, as long as the store is open and the journal still needs it.
            guard let self else { return }
            refused.store(1)
            queued.store(0)
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + retry.timeInterval) {
                [weak self] in
                guard let self, let journal, journal.usedBytes > SQLiteStoreCore.checkpointThreshold else {
                    return
                }
                queue()
            }
        }
    }

    /// Moves every record in the journal into SQLite in one transaction (synced), then drops
    /// them from the journal.
    ///
    /// A process killed before the commit leaves the records in the journal; one killed after it
    /// leaves them in both, and `checkpointed_sequence` says which are already in SQLite.
    ///
    /// `wait` bounds each wait for a lock (the busy timeout unless given). When `expiry` expires
    /// (the system is about to suspend the app) before the commit, the transaction is rolled back
    /// and the records stay in the journal: nothing lost, nothing held.
    func checkpoint(waitingAtMost wait: Duration? = nil, expiry: ExpiringActivity.Expiry? = nil) throws {
        let timeout = wait ?? options.busyTimeout
        guard let journal, journal.isWritable else { return }
        let started = CheckpointCost.threadCPUNanoseconds()
        let before = journal.baseSequence
        defer {
            let spent = CheckpointCost.threadCPUNanoseconds() &- started
            let moved = journal.baseSequence &- before
            cost.withLock { cost in
                cost.cpuNanoseconds &+= spent
                cost.records &+= moved
            }
        }
        try StoreError.fromJournal { try checkpoint(journal, timeout: timeout, expiry: expiry) }
        toldLocked.store(0)
    }

    private func checkpoint(_ journal: Journal, timeout: Duration, expiry: ExpiringActivity.Expiry?) throws {
        if expiry?.isExpired == true {
            throw StoreError(path: path, kind: .expired, detail: "before it began")
        }
        try sqlite.withDatabase(during: "a checkpoint", expiry: expiry, waitingAtMost: timeout) { database in
            let connection = database.connection
            try sqlite.perform {
                guard let expiry else {
                    return try connection.retryingWhileBusy(timeout: timeout) {
                        try connection.run("BEGIN IMMEDIATE")
                    }
                }
                // In the background, the wait for SQLite's write lock is this loop's, not SQLite's
                // own busy handler: it stops as soon as the system asks for the time back, so the
                // expiry call (which waits for this checkpoint) returns at once.
                connection.setBusyTimeout(milliseconds: 0)
                defer { connection.setBusyTimeout(milliseconds: timeout.wholeMilliseconds) }
                do {
                    try connection.retryingWhileBusy(timeout: timeout, givingUpWhen: { expiry.isExpired }) {
                        try connection.run("BEGIN IMMEDIATE")
                    }
                } catch  where expiry.isExpired {
                    throw StoreError(
                        path: path, kind: .expired, detail: "while waiting for SQLite's write lock")
                }
            }
            let moved: UInt64
            let snapshot: (end: Int, generation: UInt64)
            do {
                let checkpointed = try sqlite.perform { try StoreConnection.checkpointedSequence(connection) }
                // What an earlier checkpoint committed but did not drop is dropped first; from
                // here on nobody else moves records (that takes SQLite's write lock, held here).
                // Found without the lock (held here, SQLite's write lock keeps records where
                // they are), so writers never wait for a walk through the journal.
                let earlier = (journal.generation, journal.writeOffset)
                let leftover = journal.start(after: checkpointed, upTo: earlier.1)
                snapshot = try journal.withLock(timeout: timeout, expiry: expiry) { locked in
                    journal.drop(through: checkpointed, knownStart: (leftover, earlier.0), locked: locked)
                    return (journal.writeOffset, journal.generation)
                }
                moved = try upsertRecords(
                    of: journal, after: checkpointed, upTo: snapshot, into: connection, expiry: expiry)
                checkpointStep(.beforeCommit)
                if let expiry {
                    if options.faults.expireAtCheckpointStep == .beforeCommit { expiry.expire() }
                    if expiry.isExpired {
                        throw StoreError(path: path, kind: .expired, detail: "before the commit")
                    }
                }
                try sqlite.perform { try connection.run("COMMIT") }
                checkpointStep(.afterCommit)
            } catch {
                try? connection.run("ROLLBACK")
                throw error
            }
            // Every record up to `end` is now in SQLite: the rest starts there (unless a repair
            // moved records meanwhile, which `drop` sees by the generation).
            try journal.withLock(timeout: timeout, expiry: expiry) { locked in
                journal.drop(
                    through: moved, knownStart: (snapshot.end, snapshot.generation), locked: locked,
                    duringMove: options.faults.atCheckpointStep.map { hook in { hook(.duringMove) } })
                checkpointStep(.afterDrop)
            }
        }
    }

    /// Upserts each key's last value in the journal's records into SQLite.
    ///
    /// The records after `checkpointed`, up to the snapshot's end; then sets `checkpointed_sequence` to the last record's number
    /// (which it returns), inside the caller's transaction. The caller holds SQLite's write lock,
    /// without which nobody moves records, so they are read in place.
    func upsertRecords(
        of journal: Journal, after checkpointed: UInt64, upTo snapshot: (end: Int, generation: UInt64),
        into connection: SQLiteConnection, expiry: ExpiringActivity.Expiry? = nil
    ) throws -> UInt64 {
        var scan = RecordScan(journal: journal, from: Journal.Layout.headerSize, to: snapshot.end, after: 0)
        var latest = LatestWrites(journal: journal, expected: snapshot.end / 64)  // about a key per 64 bytes
        var scanned = 0
        while scan.nextInPlace(
            skipping: checkpointed,
            keyBytes: { sequence, key, value in
                if sequence > checkpointed { latest.note(key: key, value: value, sequence: sequence) }
            }) != nil
        {
            // A scan of a large journal (checksums over up to hundreds of MiB) looks now and then
            // whether the system wants its time back, as the upserts below do.
            scanned += 1
            if scanned % 1_024 == 0, expiry?.isExpired == true {
                throw StoreError(path: path, kind: .expired, detail: "while reading the records to move")
            }
        }
        guard journal.generation == snapshot.generation, scan.failure == nil else {
            journal.checkOnNextLock()
            throw StoreError(
                path: path, kind: .corrupt,
                detail: "the journal changed while being moved into SQLite: \(scan.failure ?? "moved")")
        }
        let moved = scan.lastSequence
        guard moved > checkpointed else { return moved }
        // In the key index's order (SQLite compares text keys byte by byte): each upsert then
        // lands beside the one before, in pages just read, instead of anywhere in a large table.
        try sqlite.perform {
            var listed = StoreConnection.MovedKeys()
            for (index, write) in latest.inKeyOrder().enumerated() {
                // A large move looks now and then whether the system wants its time back: it
                // then rolls back at once rather than at the commit.
                if index % 1_024 == 1_023, expiry?.isExpired == true {
                    throw StoreError(path: path, kind: .expired, detail: "while moving the records")
                }
                let key = journal.bytesInPlace(at: write.key.offset, count: write.key.count)
                let value = write.value.map { journal.bytesInPlace(at: $0.offset, count: $0.count) }
                try StoreConnection.upsert(
                    key: .textBytes(key), value.map { .bytes($0) } ?? .null, sequence: write.sequence,
                    into: connection)
                listed.add(key)
            }
            try StoreConnection.list(listed, batch: moved, in: connection)
            try StoreConnection.setCheckpointedSequence(moved, after: checkpointed, in: connection)
        }
        return moved
    }

    private func checkpointStep(_ step: StoreEngine.CheckpointStep) {
        options.faults.atCheckpointStep?(step)
    }
}

/// The CPU time checkpoints took and the records they moved.
///
/// ```swift
/// let cost = store.checkpointCost
/// print(cost.cpuNanoseconds / max(cost.records, 1), "ns of checkpoint per write")
/// ```
package struct CheckpointCost: Sendable {
    /// CPU time on the threads that ran checkpoints.
    var cpuNanoseconds: UInt64 = 0
    /// Records moved into SQLite.
    var records: UInt64 = 0

    /// This thread's CPU time so far.
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// Each key's last write in the records a checkpoint moves, found by the key's bytes in the
/// journal (where they lie; nothing copied, no string made).
///
/// A dictionary of `StoreKey`s cost three quarters of a checkpoint of a large store: each key
/// made into a string, hashed with SipHash, compared as Unicode, and sorted by `String`'s `<`.
/// Here a key is hashed with the cache's multiply-and-mix hash and compared with `memcmp`, in an
/// open-addressing table of indices; the keys are then sorted by their bytes, as SQLite's
/// `BINARY` collation orders the table's index. Keys are equal when their bytes are, as
/// `StoreKey`s are (scalar for scalar).
///
/// <!-- swift: not compiled (package API: RecordScan is in PrefsEngine, which is not a product) -->
/// ```swift
/// let journal = store.core.journal!
/// var scan = RecordScan(journal: journal, from: Journal.Layout.headerSize, to: journal.writeOffset, after: 0)
/// var latest = LatestWrites(journal: journal, expected: 100)
/// while scan.nextInPlace(keyBytes: { latest.note(key: $1, value: $2, sequence: $0) }) != nil {}
/// for write in latest.inKeyOrder() { print(write.sequence) }
/// ```
struct LatestWrites {
    struct Write {
        let key: RecordScan.ValueBytes
        /// `nil`: the key was removed.
        let value: RecordScan.ValueBytes?
        let sequence: UInt64
        /// The key's first 8 bytes, big-endian, zeros past its end: two keys whose prefixes
        /// differ are in the order of their prefixes (most keys, sorted without a `memcmp`).
        let prefix: UInt64
    }

    private let journal: Journal
    private var writes: [Write] = []
    /// A power of two long, at most half full: 0 when empty, else the key hash's high half
    /// (compared before the bytes are) over the write's index plus one (as `KeyTable` keeps it).
    private var slots: [UInt64]
    private let seed = KeyTable.processSeed

    init(journal: Journal, expected: Int) {
        self.journal = journal
        let keys = max(16, min(expected, 1 << 20))
        slots = Array(repeating: 0, count: 1 << (Int.bitWidth - (2 * keys - 1).leadingZeroBitCount))
        writes.reserveCapacity(keys)
    }

    private func bytes(_ key: RecordScan.ValueBytes) -> UnsafeRawBufferPointer {
        journal.bytesInPlace(at: key.offset, count: key.count)
    }

    /// Remembers a write, replacing an earlier one of the same key (records come in order).
    mutating func note(key: RecordScan.ValueBytes, value: RecordScan.ValueBytes?, sequence: UInt64) {
        if 2 * (writes.count + 1) > slots.count { grow() }
        let keyBytes = bytes(key)
        let write = Write(
            key: key, value: value, sequence: sequence,
            prefix: KeyTable.word(keyBytes, from: 0).byteSwapped)
        let tag = hash(keyBytes) >> 32
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: tag) & mask
        while slots[slot] != 0 {
            let index = Int(truncatingIfNeeded: slots[slot] & 0xFFFF_FFFF) - 1
            if slots[slot] >> 32 == tag, Self.same(keyBytes, bytes(writes[index].key)) {
                writes[index] = write
                return
            }
            slot = (slot + 1) & mask
        }
        writes.append(write)
        slots[slot] = tag << 32 | UInt64(writes.count)
    }

    /// Each key's last write, sorted by the key's bytes.
    func inKeyOrder() -> [Write] {
        writes.sorted { first, second in
            if first.prefix != second.prefix { return first.prefix < second.prefix }
            let (a, b) = (bytes(first.key), bytes(second.key))
            let common = min(a.count, b.count)
            let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
            return order != 0 ? order < 0 : a.count < b.count
        }
    }

    private func hash(_ key: UnsafeRawBufferPointer) -> UInt64 {
        KeyTable.hash(key.bindMemory(to: UInt8.self), seed: seed)
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for entry in old where entry != 0 {
            var slot = Int(truncatingIfNeeded: entry >> 32) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = entry
        }
    }
}
