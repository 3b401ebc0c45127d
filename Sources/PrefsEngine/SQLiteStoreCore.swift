import CPrefsShared
import Dispatch
import Foundation
import PrefsModel
import PrefsSupport

extension StoreEngine {
    /// The SQLite connection (checkpoints, catching up from SQLite, moving in).
    ///
    /// (`@unchecked Sendable`: a connection is not thread-safe, and is only ever used under the
    /// lock of the `Locked` that holds this value.)
    struct Database: @unchecked Sendable {
        /// Open inside `withDatabase`; a store with a journal closes it between uses (see
        /// `StoreConnection.withDatabase`).
        var connection: SQLiteConnection
        /// The file the connection opened, to notice when the path names another one.
        let file: FileIdentity?
        /// Set when the store closed the connection; nothing runs on it after that.
        var isClosed = false
        /// Set while the connection is closed between uses; the next use opens another.
        var isIdle = false
        /// How the file was opened, and so how it is opened again: read-only (a file, folder or
        /// disk this process cannot write), and immutable (where SQLite could not even make its
        /// `-shm` file).
        var readOnly = false
        var immutable = false
    }

    /// What reads answer from: every value, and how far into the journal it is.
    struct Cache {
        var values: KeyTable
        /// Every record up to this sequence number is applied.
        var position: Journal.Position
    }
}

/// Everything an ``SQLiteStore`` does with its files, coordinating four parts: the journal (the
/// `PrefsEngine` engine), the ``StoreCache`` reads answer from, the ``StoreConnection`` to
/// SQLite, and the ``Checkpointer`` that moves the journal into SQLite.
///
/// A write (``commit(_:)``) takes this process's writer lock and the journal's, brings the cache
/// up to the journal, appends one record, applies it to the cache and announces it; a write of
/// one value among other stores' writes may append without applying anything
/// (``appendAlone(_:_:_:_:after:)``), leaving the records to the next read. A read
/// (``read(_:)``) brings the cache up to the journal, or to SQLite when a checkpoint dropped
/// records it never saw.
///
/// Background work (the watch, checkpoints) holds this object, never the store, so the store's
/// last release (and the file's closing) happens on the thread of its user.
///
/// Lock order: `writer`, then the connection (and SQLite's write lock), then the journal's lock,
/// then the cache's. Writes take `writer` and the journal's lock (and the connection before the
/// journal's lock when they must catch up from SQLite); checkpoints take the connection, SQLite's
/// write lock and the journal's lock; reads take the cache's (and the connection when catching
/// up from SQLite).
package final class SQLiteStoreCore: Sendable {
    let path: String
    let options: StoreEngine.Settings
    /// `nil` for a read-only store whose folder has no journal: it reads SQLite alone.
    package let journal: Journal?
    /// One write at a time per store among this process's threads; holds what writes remember
    /// between them.
    private let writer: TransactionLock<WriterState>
    /// Asked before every write: is the file at the path still the one opened.
    let fileCheck: OpenedFileCheck
    let sqlite: StoreConnection
    let cache: StoreCache
    package let checkpointer: Checkpointer
    package var observers: StoreObservers { cache.observers }
    /// How many times the watch looked for other stores' writes (``lookForChanges()``).
    let watchLooks = AtomicWord()
    /// The busy timeout in milliseconds, for the journal's lock.
    private let lockTimeout: Int64

    /// The journal's size at which a write queues a checkpoint in the background.
    static let checkpointThreshold = 1 << 20

    /// The number of keys from which a write asks for its key's entry ahead of time: a smaller
    /// table (160 KB of entries at 4,096 keys) stays in the processor's caches between writes,
    /// and the lock that asking takes would cost more than the miss it saves.
    static let entryPrefetchFloor = 4_096
    /// The size at which a write first moves the journal into SQLite itself (kept per store: a
    /// `static let` would cost every write a call to check that it is initialized).
    let journalLimit: Int
    /// ``KeyTable/processSeed``, kept here for the same reason.
    private let keySeed = KeyTable.processSeed

    /// The in-line checkpoint's size for a journal that can hold `reservation` bytes: 64 MiB, or a
    /// quarter of the reservation where that is smaller (32 MiB on watchOS's 32-bit `arm64_32`),
    /// so a write moves the journal into SQLite long before the journal is full (a write that
    /// finds it full throws `.tooLarge`).
    static func journalLimit(reservation: Int) -> Int { min(64 << 20, reservation / 4) }

    package init(path: String, options: StoreEngine.Settings, opened: StoreEngine.Opened) {
        self.path = path
        self.options = options
        lockTimeout = Int64(options.busyTimeout.wholeMilliseconds)
        journalLimit =
            options.faults.journalLimit
            ?? SQLiteStoreCore.journalLimit(reservation: Journal.Layout.reservation)
        journal = opened.journal
        writer = TransactionLock(.init(), store: "SQLiteStore(\(path))", timeout: options.busyTimeout)
        fileCheck = OpenedFileCheck(path: path, opened: opened.database.file)
        sqlite = StoreConnection(
            path: path, options: options, database: opened.database,
            closesWhenIdle: true)
        cache = StoreCache(
            opened.cache, journal: opened.journal, observers: StoreObservers(label: "SQLite"), path: path,
            report: options.report, faults: options.faults)
        checkpointer = Checkpointer(path: path, options: options, journal: opened.journal, sqlite: sqlite)
    }

    /// Ends the store's work in the background at its next step (a checkpoint, the watch's look
    /// at SQLite), without waiting for it: called first as the store is let go, so that neither
    /// the watch's stop nor ``close()`` waits for all of it.
    package func endBackgroundWork() {
        checkpointer.background.endAll()
    }

    /// Moves the journal into SQLite, then closes the connection; called once, by the store's
    /// `deinit`.
    package func close() {
        if let journal, journal.isWritable, journal.usedBytes > 0 {
            // Briefly: a store let go must not hang its thread on another process's lock (a
            // writer stopped while holding it); whatever is not moved now, the next store moves.
            // Inside the system's background time, as every checkpoint: a store released as the
            // app is suspended must not hold SQLite's and the journal's locks then (0xdead10cc);
            // refused or taken back, nothing is lost (the records stay for the next store).
            let checkpointer = checkpointer
            let wait = min(options.busyTimeout, StoreEngine.openingLockWait)
            ExpiringActivity.runAndWait(
                "moving the journal of \(path) into SQLite as the store closes",
                system: options.faults.expiringActivity
            ) { expiry in
                do {
                    // With the expiry: its waits are the checkpoint's own, bounded by `wait` and
                    // ended by the system asking for the time back (SQLite's busy handler alone
                    // would wait the whole lock timeout).
                    if !expiry.isExpired { try checkpointer.checkpoint(waitingAtMost: wait, expiry: expiry) }
                } catch {
                    journal.report("could not move the journal into SQLite while closing: \(error)")
                }
            }
        }
        sqlite.close()
    }

    // MARK: - Writing

    /// One write: `body` runs on the cache (current with every process's writes) holding the
    /// journal's lock, and its writes are appended as one record.
    ///
    /// With `expiry` (a write in the system's background time), every wait ends, throwing
    /// `.expired`, as soon as the system asks for the time back: for another thread's write, for
    /// another process's lock, for SQLite.
    package func write<Result>(
        expiry: ExpiringActivity.Expiry? = nil, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> Result {
        try commit(expiry: expiry) {
            var transaction = StoreTransaction(
                read: { key in self.cache.withLock { $0.values.value(for: StoreKey(key)) } },
                keys: { self.cache.withLock { $0.values.names } })
            let result = try body(&transaction)
            return (.many(transaction.writes), result)
        }
    }

    /// Stores or removes one value: a write without a transaction to run.
    ///
    /// The key's place in the cache's table is fetched into the processor's caches while the
    /// write does its other work (see ``KeyTable/prefetch(hash:step:)``).
    package func set(_ value: PropertyListValue?, for key: StoreKey) throws {
        // Checked here, encoded before the journal's lock and numbered under it: the journal is
        // held only for what must be.
        let write = Writes.one(key, value)
        try write.checkStorable(store: path)
        try commit(keyHash: KeyTable.hash(key.name, seed: keySeed), encoding: write) { (write, ()) }
    }

    /// What one write changes: one key (no dictionary to build), or a transaction's writes.
    enum Writes {
        case one(StoreKey, PropertyListValue?)
        case many([StoreKey: ValueChange])

        var count: Int {
            switch self {
            case .one: 1
            case .many(let writes): writes.count
            }
        }

        func each(_ body: (StoreKey, PropertyListValue?) throws -> Void) rethrows {
            switch self {
            case .one(let key, let value): try body(key, value)
            case .many(let writes): for (key, change) in writes { try body(key, change.newValue) }
            }
        }

        var change: StoreChange {
            switch self {
            case .one(let key, let value): StoreChange(values: [key: ValueChange(value)])
            case .many(let writes): StoreChange(values: writes)
            }
        }

        /// Throws unless every value may be stored and the record of them all fits in the
        /// journal: the record's length is a 32-bit field, and a transaction of many large
        /// values (each within its own limit) would overflow it while being encoded.
        func checkStorable(store: String) throws {
            if case .one(let key, let value) = self {
                // The one value is within its own limit (8 MiB): only a key of about the
                // journal's size could make the record too large (a write's common case: no sum).
                try value?.checkStorable(key: key.name, store: store)
                guard key.name.utf8.count > Journal.Layout.reservation / 2 else { return }
            }
            // Counted in 64 bits: on a watch, a huge key beside the rest would overflow `Int`.
            var recordSize = UInt64(JournalRecord.headerSize)
            try each { key, value in
                let valueSize = try value?.checkStorable(key: key.name, store: store) ?? 0
                recordSize += UInt64(RecordEntryLayout.size + valueSize) + UInt64(key.name.utf8.count)
            }
            let room = UInt64(Journal.Layout.reservation - Journal.Layout.headerSize)
            guard recordSize > room else { return }
            var keys: [String] = []
            each { key, _ in keys.append(key.name) }
            throw StoreError(
                kind: .tooLarge, store: store,
                message:
                    "this write of \(count) values takes \(recordSize) bytes, and the journal holds at most \(room) at once: write them in smaller transactions",
                keys: keys.sorted())
        }

        /// The record of these writes, numbered `sequence`.
        ///
        /// Without a number (nor checksum, for ``SealedRecord/number(sequence:)`` to give) when
        /// `sequence` is `nil`. Written over `storage` (a last record's memory).
        func encoded(sequence: UInt64?, reusing storage: consuming [UInt8] = []) -> SealedRecord {
            var record = RecordWriter(sequence: sequence ?? 0, count: count, reusing: consume storage)
            each { key, value in record.add(key, value) }
            return sequence == nil ? record.sealedUnnumbered() : record.sealed()
        }
    }

    /// Runs `produce` holding the journal's lock on a current cache, and appends the writes it
    /// returns as one record.
    ///
    /// `keyHash` is the hash of the one key a write will change, and `encoding` the writes
    /// `produce` will return, when they are known beforehand.
    private func commit<Result>(
        keyHash: UInt64? = nil, encoding: Writes? = nil, expiry: ExpiringActivity.Expiry? = nil,
        _ produce: () throws -> (writes: Writes, result: Result)
    ) throws -> Result {
        guard let journal, journal.isWritable else {
            throw StoreError(path: path, kind: .readOnly, detail: "the store was opened read-only")
        }
        // Where the cache is: a write of one value may append without applying what others
        // wrote since (``appendAlone(_:_:_:_:after:)``; were it out of date by the journal's
        // lock, it would only check more records).
        let (position, largeTable) = cache.withLock { cache in
            cache.values.makeRoom()
            if let keyHash { cache.values.prefetch(hash: keyHash, step: .slot) }
            return (cache.position, cache.values.count >= Self.entryPrefetchFloor)
        }
        if journal.usedBytes > journalLimit {
            // Background moves cannot keep up: this write moves the journal itself, unless the
            // system refuses background time (then the app is in the background, and a move of
            // this size on its thread could outlast the time it has); the journal holds four
            // times the limit meanwhile, and a refused move is asked for again each second.
            if checkpointer.refused.load() != 0 {
                checkpointer.queue()
            } else if let expiry {
                try checkpointer.checkpoint(expiry: expiry)
            } else {
                try moveInLine()
            }
        }
        return try withWriter(expiry: expiry) { writer in
            try fileCheck.verify(&writer.looks)
            // The key's entry, now that the check's system call gave its slot time to arrive:
            // it then arrives while the journal's lock is taken and the record numbered (asked
            // for under that lock, it was still a cache miss at 100,000 keys when applied).
            if largeTable, let keyHash { cache.withLock { $0.values.prefetch(hash: keyHash, step: .entry) } }
            // Numbered in place under the journal's lock (no copy), and handed back after.
            var prepared = encoding.map { $0.encoded(sequence: nil, reusing: writer.takeSpareRecord()) }
            defer { writer.keepSpareRecord(prepared.take()?.memory) }
            // Each pass that finds the cache behind the journal reads SQLite first. A checkpoint
            // of another process can drop records between that read and the journal's lock, but
            // it holds SQLite's write lock while it does, so it cannot do it every time; after
            // four passes something else is wrong (a journal whose base moves without a commit),
            // and the write fails rather than loop.
            for attempt in 0..<4 {
                if attempt > 0 {
                    // The cache is behind what the journal holds: catch up from SQLite, outside
                    // the journal's lock (the connection comes before it). A failure to read
                    // SQLite is this write's failure.
                    try catchUpFromSQLite(expiry: expiry)
                }
                var result: Result?
                let turn = try withJournalLock(journal, expiry: expiry) { locked in
                    if prepared != nil,
                        let appended = try appendAlone(
                            journal, locked, &prepared!, &writer.checked, after: position)
                    {
                        result = try produce().result
                        return appended
                    }
                    return try commitHoldingLock(
                        journal, locked, keyHash: keyHash, &prepared, &result, produce)
                }
                if let result {
                    if case .appended(let start, let end, let wake) = turn {
                        if wake { journal.wakeWatchers() }
                        if options.powerSafe { try journal.sync(start..<end) }
                        if journal.usedBytes > Self.checkpointThreshold { checkpointer.queue() }
                    }
                    return result
                }
            }
            throw StoreError(
                path: path, kind: .corrupt,
                detail: "the store's cache cannot catch up with its journal and SQLite; nothing was written")
        }
    }

    /// What a store's writes remember between them, under its writer lock.
    struct WriterState {
        /// What the file checks remember (see ``OpenedFileCheck``).
        var looks = OpenedFileCheck.Looks()
        /// Where the journal's records are checked whole up to, past the cache's position: the
        /// end of the last record ``appendAlone(_:_:_:_:after:)`` appended.
        var checked: Journal.Position?
        /// The memory of the last record written, for the next one's encoding: a malloc and a
        /// free were a tenth of a write.
        private var spareRecord: [UInt8] = []

        mutating func takeSpareRecord() -> [UInt8] {
            defer { spareRecord = [] }
            return spareRecord
        }

        /// Keeps a record's memory for the next write, unless it is large (one large value must
        /// not keep its size for the store's lifetime).
        mutating func keepSpareRecord(_ memory: [UInt8]?) {
            if let memory, memory.count <= 4096 { spareRecord = memory }
        }
    }

    /// The journal's lock for a write: waited for the lock timeout, or in short steps that end at
    /// `expiry`.
    @inline(__always)
    private func withJournalLock<Result>(
        _ journal: Journal, expiry: ExpiringActivity.Expiry?, _ body: (Journal.LockHeld) throws -> Result
    ) throws -> Result {
        guard let expiry else { return try journal.withLock(timeoutMilliseconds: lockTimeout, body) }
        return try StoreError.fromJournal {
            try journal.withLock(timeout: .milliseconds(lockTimeout), expiry: expiry, body)
        }
    }

    /// Runs `body` as this process's only writer to the store, waiting at most the busy timeout
    /// (or until `expiry`).
    @inline(__always)
    func withWriter<Result>(
        expiry: ExpiringActivity.Expiry? = nil, _ body: (inout WriterState) throws -> Result
    ) throws -> Result {
        do {
            guard let expiry else { return try writer.withLock(during: "a write", body) }
            return try writer.withLock(during: "a write", givingUpWhen: { expiry.isExpired }, body)
        } catch let failure as JournalError {
            // Every write reaches the journal inside this: its failures leave as the store's.
            throw StoreError(failure)
        }
    }

    /// What a write did holding the journal's lock.
    ///
    /// Not generic, so the lock's generic call needs no type built at run time (a tuple holding
    /// the write's result did, and the first write of a process paid for a search of the
    /// program's conformances: a tenth of a process's thousand writes).
    private enum LockedTurn {
        /// The cache fell behind what the journal holds (a checkpoint ran meanwhile): catch up
        /// from SQLite and try again.
        case behind
        case nothingToWrite
        /// One record appended between these offsets; `wake`: watchers sleep, waiting for it.
        case appended(start: Int, end: Int, wake: Bool)
    }

    /// Appends one value's record without applying it, nor what other stores wrote before it,
    /// when they wrote since this cache last caught up and nobody here observes the store.
    ///
    /// Applying their records (their keys made into strings, put into the table, which grows)
    /// was most of a write's time holding the journal's lock while several processes write: the
    /// next read applies them all, in order, this record included (a read after this write
    /// returned sees it: the journal's sequence number is past the cache's). They are checked
    /// whole first, each once (`checked` remembers how far), so that the record never lands
    /// after one readers would stop at: then, or when the cache is current (applying this one
    /// record is cheap), or when a checkpoint moved the records since (their places changed),
    /// `nil`, and the write goes the usual way (``commitHoldingLock(_:_:keyHash:_:_:_:)``,
    /// which repairs what it finds damaged).
    private func appendAlone(
        _ journal: Journal, _ locked: Journal.LockHeld, _ record: inout SealedRecord,
        _ checked: inout Journal.Position?,
        after position: Journal.Position
    ) throws -> LockedTurn? {
        var from = position
        // The cache current: applying this one record is cheap. Observers (a lock to count
        // them, so asked second) hear each write as it is made.
        guard from.sequence < journal.sequence, observers.count == 0 else { return nil }
        let generation = journal.generation
        if let checked, checked.generation == generation, checked.sequence > from.sequence { from = checked }
        guard from.generation == generation else { return nil }
        var scan = RecordScan(
            journal: journal, from: from.offset, to: journal.writeOffset, after: from.sequence)
        while scan.nextChecked() != nil {}
        guard scan.failure == nil, scan.lastSequence == journal.sequence else { return nil }
        let sequence = try nextSequence(journal)  // a hostile record's number may be the last one
        record.number(sequence: sequence)
        let end = try journal.append(record, locked: locked)
        checked = Journal.Position(sequence: sequence, generation: generation, offset: end)
        return .appended(start: end - record.count, end: end, wake: journal.announce(locked: locked))
    }

    /// The write itself; sets `result` unless the cache fell behind what the journal holds.
    ///
    /// `prepared`: the record of the writes `produce` returns, already checked and encoded (with
    /// neither number nor checksum), when they were known before the lock.
    private func commitHoldingLock<Result>(
        _ journal: Journal, _ locked: Journal.LockHeld, keyHash: UInt64?, _ prepared: inout SealedRecord?,
        _ result: inout Result?, _ produce: () throws -> (writes: Writes, result: Result)
    ) throws -> LockedTurn {
        // Writes made from the current values (`update`, transactions) are produced once the
        // cache is current. One value encoded before the locks is not (`produce` only hands it
        // back): finding the cache current is then part of the hold that appends it.
        if prepared == nil, !catchUpHoldingLock(journal, locked) { return .behind }
        let writes: Writes
        (writes, result) = try produce()
        guard writes.count > 0 else { return .nothingToWrite }
        if prepared == nil { try writes.checkStorable(store: path) }
        let sequence = try nextSequence(journal)
        let record: SealedRecord
        if prepared != nil {
            prepared!.number(sequence: sequence)
            record = prepared!
        } else {
            record = writes.encoded(sequence: sequence)
        }
        while true {
            let end = try cache.withLock { cache -> Int? in
                guard cache.position.sequence >= journal.sequence else { return nil }
                return try append(record, of: writes, keyHash: keyHash, to: journal, locked, &cache)
            }
            if let end {
                return .appended(start: end - record.count, end: end, wake: journal.announce(locked: locked))
            }
            // Only a value encoded before the locks finds the cache behind here (a caught-up
            // cache stays so while the journal's lock is held): catch up, then append.
            guard catchUpHoldingLock(journal, locked) else {
                result = nil
                return .behind
            }
        }
    }

    /// Brings the cache up to the journal's last record, holding the journal's lock; `false`
    /// when the records it needs were moved into SQLite (read SQLite first, outside the lock).
    private func catchUpHoldingLock(_ journal: Journal, _ locked: Journal.LockHeld) -> Bool {
        var outcome = cache.withLock { cache in
            cache.position.sequence >= journal.sequence
                ? .caughtUp : self.cache.catchUp(&cache, holding: locked)
        }
        if outcome == .damaged {
            // Cut now: a record appended after the damage would be out of every reader's reach.
            journal.repair(reason: nil, held: locked)
            outcome = cache.withLock { self.cache.catchUp(&$0, holding: locked) }
        }
        return outcome != .behind
    }

    /// Moves the journal into SQLite on the writer's thread, inside the system's background time.
    ///
    /// As every move is: a writer in an app going to the background must not be suspended
    /// holding SQLite's locks (0xdead10cc). Refused or taken back, the records stay in the
    /// journal (which holds four times the limit) and a background move is asked for; the write
    /// goes on either way, as it does while a locked device keeps SQLite's files closed.
    private func moveInLine() throws {
        let checkpointer = checkpointer
        let outcome = ExpiringActivity.runAndWaitForResult(
            "moving the journal of \(path) into SQLite as it passed its limit",
            system: options.faults.expiringActivity
        ) { expiry in try checkpointer.checkpoint(expiry: expiry) }
        switch outcome {
        case nil: checkpointer.queue()
        case .success?: break
        case .failure(let error as StoreError)? where error.kind == .expired: break
        case .failure(let error as StoreError)? where error.kind == .protectedDataUnavailable:
            // SQLite's files are locked away while the journal is not (`.completeUnlessOpen`):
            // the write goes on, and the move waits for the unlock.
            checkpointer.tellLocked(error)
        case .failure(let error)?: throw error
        }
    }

    /// The number the next record takes.
    private func nextSequence(_ journal: Journal) throws -> UInt64 {
        guard journal.sequence < Journal.Layout.sequenceLimit else {
            throw StoreError(
                path: path, kind: .corrupt, detail: "the journal's sequence numbers are used up")
        }
        return journal.sequence + 1
    }

    /// Appends `record` (the writes `writes`, numbered) and applies them to the cache.
    ///
    /// The caller holds the cache's lock: a look at the journal from this process never finds
    /// the record before the cache has it (it would apply and announce it twice). Returns where
    /// the record ends.
    private func append(
        _ record: SealedRecord, of writes: Writes, keyHash: UInt64?, to journal: Journal,
        _ locked: Journal.LockHeld, _ cache: inout StoreEngine.Cache
    ) throws -> Int {
        let end = try journal.append(record, locked: locked)
        if let keyHash, case .one(let key, let value) = writes {
            cache.values.set(value, for: key, hash: keyHash)
        } else {
            writes.each { key, value in cache.values[key] = value }
        }
        cache.position = Journal.Position(
            sequence: record.sequence, generation: journal.generation, offset: end)
        // Published holding the journal's lock: observers hear in the order of the records.
        if observers.count > 0 { observers.publish(writes.change) }
        return end
    }

    /// Commits everything written so far into SQLite and syncs it.
    ///
    /// Inside a transaction on this thread it cannot (the transaction holds the journal): it
    /// syncs the journal instead, which makes every earlier write as durable.
    package func flush() throws {
        guard let journal, journal.isWritable else { return }
        if writer.isHeldByCurrentThread {
            try StoreError.fromJournal { try journal.sync() }
        } else {
            try checkpointer.checkpoint()
        }
    }
}
