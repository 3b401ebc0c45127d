import CPrefsShared
import Foundation
import PrefsModel
import PrefsSupport

/// What a store's reads answer from: every value, current up to a position in the journal, with
/// the lock-free read slots in front of it; and the one way the values move forward, applying
/// the journal's records (or SQLite's rows) and telling observers, one change per record.
///
/// Its states, for a reader of the code: *current* (the position is the journal's sequence
/// number: a read answers at once), *behind in the journal* (records after the position are
/// still in the journal: ``catchUp(_:)`` applies them), *behind the journal* (a checkpoint
/// dropped records the cache never saw: ``catchUp(_:)`` answers `.behind`, and the store reads
/// SQLite's rows into ``adopt(_:ifStillAt:base:)``), and *damaged* (a record past the position is
/// not whole: what precedes it is applied and the next holder of the journal's lock cuts it).
///
/// ```swift
/// let cache = store.core.cache
/// let outcome = cache.withLock { cache.catchUp(&$0) }  // .caughtUp
/// ```
final class StoreCache: Sendable {
    private let state: Locked<StoreEngine.Cache>
    /// Plain values recently read, answered without the cache's lock.
    let readSlots = ReadSlots()
    /// What a read from ``readSlots`` needs, copied out without a retain.
    let slotReader: ReadSlots.Reader
    /// `nil` for a read-only store whose folder has no journal.
    let journal: Journal?
    /// The journal's sequence number in its mapping (which lives as long as `journal`).
    ///
    /// The read path loads it without touching (so retaining) the journal object. Only ever
    /// loaded atomically, from any thread: `nonisolated(unsafe)` because a pointer is not
    /// `Sendable`.
    nonisolated(unsafe) let journalSequence: UnsafePointer<UInt64>?
    /// Non-zero once a page of the journal's mapping faulted (see `Journal.cutUnderMapping`).
    ///
    /// Then the header may read as zeros, and the read slots, checked against it, are not asked
    /// until the journal is readable again. Loaded as `journalSequence` is.
    nonisolated(unsafe) let mappingFaulted: UnsafePointer<UInt32>?
    let observers: StoreObservers
    private let path: String
    private let report: Journal.Reporter
    /// Called before a read without the journal's lock copies the records (tests only).
    private let beforeCopyingRecords: (@Sendable () -> Void)?

    init(
        _ cache: StoreEngine.Cache, journal: Journal?, observers: StoreObservers, path: String,
        report: @escaping Journal.Reporter, faults: SQLiteStoreFaults = .init()
    ) {
        beforeCopyingRecords = faults.beforeCopyingRecords
        self.journal = journal
        slotReader = readSlots.reader
        journalSequence = journal.map { UnsafePointer($0.word64(Journal.Layout.sequenceOffset)) }
        mappingFaulted = journal.map { UnsafePointer($0.cutUnderMapping) }
        self.observers = observers
        self.path = path
        self.report = report
        var cache = cache
        cache.values.readSlots = readSlots
        state = Locked(cache)
    }

    /// Runs `body` holding the cache's lock.
    func withLock<Result>(_ body: (inout StoreEngine.Cache) throws -> Result) rethrows -> Result {
        try state.withLock(body)
    }

    /// The sequence number up to which every record is applied.
    var position: UInt64 { state.withLock { $0.position.sequence } }

    /// How a catch-up from the journal ended.
    enum CatchUp {
        /// Every record written before it started is applied.
        case caughtUp
        /// The journal no longer holds every record after the cache's position: read SQLite.
        case behind
        /// The records up to a damaged one are applied; the damage is reported.
        case damaged
        /// The journal cannot be read now (its data is locked away while the device is locked):
        /// nothing was applied; the cache answers as it is, and a later read catches up.
        case unreadable
    }

    /// Applies the records after the cache's position, reading the journal without its lock
    /// (the caller holds the cache's).
    func catchUp(_ cache: inout StoreEngine.Cache) -> CatchUp {
        guard let journal else { return .caughtUp }
        // A store that only reads is never the next holder of the lock, which maps locked-away
        // data again once it is readable: it does so itself here.
        guard journal.isReadable() else { return .unreadable }
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
            // A damaged end of records (outside the journal) is neither copied nor trusted: the
            // next holder of the lock repairs it, and this read goes to SQLite meanwhile.
            guard end >= Journal.Layout.headerSize, end <= Journal.Layout.reservation else {
                journal.checkOnNextLock()
                return .behind
            }
            // The records' bytes, copied in one go: checked only once the copy is done, so what
            // was read while records moved is thrown away (a record at a time, each copied and
            // decoded into objects, cost five times as much as reading in place).
            let start = start(of: cache, in: generation)
            beforeCopyingRecords?()
            let copy = journal.copyBytes(at: start, count: max(0, end - start))
            prefs_atomic_fence()
            // A page that faulted during the copy read as zeros, which are not the records:
            // nothing of it is applied (taken as the records' end, the position would pass
            // records never read).
            guard !journal.faultedUnderMapping else { return journal.isReadable() ? .behind : .unreadable }
            guard journal.generation == generation else { continue }
            return copy.withUnsafeBytes { bytes in
                var scan = RecordScan(copy: bytes, of: journal, from: start, after: 0)
                var application = RecordApplication(observers: observers)
                while scan.nextInPlace(
                    skipping: cache.position.sequence,
                    { _, key, value in
                        let encoded = value.map {
                            UnsafeRawBufferPointer(
                                rebasing: bytes[($0.offset - start)..<($0.offset - start + $0.count)])
                        }
                        application.apply(key: key, encoded: encoded, to: &cache.values)
                    }) != nil
                {
                    application.recordEnded()
                }
                return finish(&cache, after: scan, announced: announced, generation: generation, application)
            }
        }
        return .behind
    }

    /// Applies the records after the cache's position holding the journal's lock (the caller
    /// holds the cache's too): then nobody appends or moves records, so they are read where they
    /// lie and applied as they are read, with no copy (a writer catching up with others' records
    /// spent most of its write copying and decoding them).
    func catchUp(_ cache: inout StoreEngine.Cache, holding _: Journal.LockHeld) -> CatchUp {
        guard let journal else { return .caughtUp }
        guard cache.position.sequence >= journal.baseSequence else { return .behind }
        let generation = journal.generation
        var scan = RecordScan(
            journal: journal, from: start(of: cache, in: generation), to: journal.writeOffset, after: 0)
        var application = RecordApplication(observers: observers)
        while scan.nextInPlace(
            skipping: cache.position.sequence,
            { _, key, value in
                let encoded = value.map { journal.bytesInPlace(at: $0.offset, count: $0.count) }
                application.apply(key: key, encoded: encoded, to: &cache.values)
            }) != nil
        {
            application.recordEnded()
        }
        return finish(&cache, after: scan, announced: journal.sequence, generation: generation, application)
    }

    /// Where the records after the cache's position start in the journal's `generation`: where it
    /// stopped, unless records were moved since (then from the first, stepping over those it has).
    private func start(of cache: StoreEngine.Cache, in generation: UInt64) -> Int {
        cache.position.generation == generation ? cache.position.offset : Journal.Layout.headerSize
    }

    /// Moves the position past what `scan` read, reports damage and undecodable values.
    private func finish(
        _ cache: inout StoreEngine.Cache, after scan: RecordScan, announced: UInt64, generation: UInt64,
        _ application: RecordApplication
    ) -> CatchUp {
        if let failure = scan.failure, let journal {
            // Stable bytes that are not a record: damage. The next holder of the lock cuts it.
            journal.report("\(failure); reading stops there")
            journal.checkOnNextLock()
        }
        StoreEngine.reportUndecodable(application.undecodable, in: path, to: report)
        cache.position = Journal.Position(
            sequence: max(scan.lastSequence, cache.position.sequence, scan.failure == nil ? announced : 0),
            generation: generation, offset: scan.offset)
        return scan.failure == nil ? .caughtUp : .damaged
    }

    /// Takes SQLite's changed rows, unless the cache moved since they were read from `known`
    /// (then they are not the newest), and tells observers.
    ///
    /// `base` is the journal's base, read before the rows: when SQLite holds less, a power loss
    /// undid a checkpoint's commit (or the journal belongs to another copy of the database), and
    /// what lies between is said to be lost and skipped.
    func adopt(_ rows: StoreConnection.ChangedRows, ifStillAt known: UInt64, base: UInt64) {
        StoreEngine.reportUndecodable(rows.undecodable, in: path, to: report)
        var highest = rows.highest
        if highest < base {
            journal?.report(
                "the records after \(highest) up to \(base) are in neither the journal nor SQLite; continuing from \(base)"
            )
            highest = base
        }
        state.withLock { cache in
            guard cache.position.sequence == known else { return }
            for (key, value) in rows.values { cache.values[key] = value }
            cache.position = Journal.Position(
                sequence: highest, generation: .max, offset: Journal.Layout.headerSize)
            observers.publish(StoreChange(newValues: rows.values))
        }
    }
}

/// Applies a journal record's entries to the cache one by one and tells observers, one change per
/// record (in order); the one way a record read from the journal reaches the cache.
///
/// A value whose stored encoding does not decode leaves the cache's value as it was and is
/// reported.
private struct RecordApplication {
    private let observers: StoreObservers
    /// The record's change so far; `nil` when nobody observes (nothing to gather).
    private var change: [StoreKey: ValueChange]?
    private(set) var undecodable: Set<String> = []

    init(observers: StoreObservers) {
        self.observers = observers
        change = observers.count > 0 ? [:] : nil
    }

    /// Applies one entry: `encoded` is its value's stored encoding, `nil` for a removal.
    mutating func apply(key name: String, encoded: UnsafeRawBufferPointer?, to values: inout KeyTable) {
        let key = StoreKey(name)
        guard let encoded else {
            values[key] = nil
            change?[key] = .removed
            return
        }
        guard let value = try? PropertyListValue(storedEncodingBytes: encoded) else {
            undecodable.insert(name)
            return
        }
        values[key] = value
        change?[key] = .set(value)
    }

    /// Tells observers what the record changed.
    mutating func recordEnded() {
        guard let recorded = change, !recorded.isEmpty else { return }
        observers.publish(StoreChange(values: recorded))
        change = [:]
    }
}
