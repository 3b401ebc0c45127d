import Dispatch
import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// What an app being suspended asks of a store, run on Linux through a stand-in for
/// `performExpiringActivity` that calls back as iOS does: refusals, expiry in the middle of a
/// checkpoint, nothing held, and the watch's own promises.
@Suite struct SuspensionTests {
    /// 300 values of 4 KB: past the 1 MiB at which a write queues a background checkpoint.
    private static func fillPastThreshold(_ store: SQLiteStore, round: Int = 0) throws {
        let payload = String(repeating: "x", count: 4_000)
        for index in 0..<300 {
            try store.setValue(.string("\(round).\(index)\(payload)"), forKey: "k\(index)")
        }
    }

    /// A stand-in for the system that records each reason it is asked for and refuses those
    /// starting with `prefix` while `refusing` holds.
    private static func system(
        recording asked: Locked<[String]>, refusing prefix: String, while refusing: Locked<Bool>
    ) -> ExpiringActivity.System {
        { reason, respond in
            asked.withLock { $0.append(reason) }
            let refuse = reason.hasPrefix(prefix) && refusing.withLock { $0 }
            DispatchQueue.global().async { respond(refuse) }
        }
    }

    private static func rowsInSQLite(_ path: String) throws -> Int64 {
        try SQLiteConnection(path: path).integer("SELECT count(*) FROM prefs_entries") ?? 0
    }

    /// A refused background assertion (the block called only with `expired == true`) leaves no
    /// checkpoint marked as queued, and the move is asked for again by itself: once the system
    /// gives time, the journal reaches SQLite with no further write.
    @Test func aRefusedCheckpointIsAskedForAgainAndThenRuns() async throws {
        let path = TestFiles.uniquePath("refused")
        let refusals = Locked(0)
        let granting = Locked(false)
        var options = SQLiteStore.Options()
        options.faults.refusedCheckpointRetry = .milliseconds(50)
        options.faults.expiringActivity = { _, respond in
            let grant = granting.withLock { $0 }
            if !grant { refusals.withLock { $0 += 1 } }
            DispatchQueue.global().async { respond(!grant) }
        }
        let store = try SQLiteStore(path: path, options: options)
        try Self.fillPastThreshold(store)
        #expect(await eventually { refusals.withLock { $0 } >= 3 }, "a refused move was not asked for again")
        #expect(store.core.checkpointer.refused.load() == 1)
        #expect(try Self.rowsInSQLite(path) == 0)
        granting.withLock { $0 = true }
        #expect(await eventually { (try? Self.rowsInSQLite(path)) == 300 }, "the move never ran once granted")
        #expect(await eventually { store.core.checkpointer.queued.load() == 0 })
        #expect(store.core.checkpointer.refused.load() == 0)
    }

    /// The system taking the time back while a checkpoint is inside its transaction: the expiry
    /// call returns only once the checkpoint has rolled back and let go of SQLite's write lock
    /// and the journal's, so the app is never suspended holding them (0xdead10cc).
    @Test func anExpiryReturnsOnlyOnceEveryLockIsLetGo() async throws {
        let path = TestFiles.uniquePath("expiry-waits")
        let inTransaction = DispatchSemaphore(value: 0)
        let heldAtExpiry = Locked<[String]?>(nil)
        var options = SQLiteStore.Options()
        options.faults.atCheckpointStep = { step in
            guard step == .beforeCommit else { return }
            inTransaction.signal()
            usleep(300_000)  // the expiry arrives meanwhile, on another thread
        }
        options.faults.expiringActivity = { _, respond in
            DispatchQueue.global().async { respond(false) }
            DispatchQueue.global().async {
                inTransaction.wait()
                respond(true)
                // The moment the expiry handler returned: what would the suspended app hold?
                var held: [String] = []
                if let other = try? SQLiteConnection(path: path) {
                    other.setBusyTimeout(milliseconds: 0)
                    if (try? other.execute("BEGIN IMMEDIATE; ROLLBACK")) == nil {
                        held.append("SQLite's write lock")
                    }
                }
                heldAtExpiry.withLock { $0 = held }
            }
        }
        let store = try SQLiteStore(path: path, options: options)
        try Self.fillPastThreshold(store)
        #expect(await eventually { heldAtExpiry.withLock { $0 } != nil })
        #expect(heldAtExpiry.withLock { $0 } == [])
        // The journal's lock is free too.
        try store.core.journal?.withLock(timeout: .milliseconds(1)) { _ in }
        #expect(store.value(forKey: "k299") != nil)
        try store.flush()
        #expect(try Self.rowsInSQLite(path) == 300)
    }

    /// A background move waiting for a lock another process holds stops waiting when the
    /// system asks for the time back: the expiry call (which waits for the move) returns at once,
    /// not after the store's lock timeout (10 s), and nothing is lost.
    @Test func anExpiryCutsAWaitForALockShort() async throws {
        let path = TestFiles.uniquePath("expiry-cuts-wait")
        let expiryReturned = Locked<Duration?>(nil)
        var options = SQLiteStore.Options()
        options.faults.expiringActivity = { _, respond in
            DispatchQueue.global().async { respond(false) }
            DispatchQueue.global().async {
                usleep(300_000)  // the move is waiting for SQLite's write lock by now
                let started = ContinuousClock.now
                respond(true)
                expiryReturned.withLock { $0 = ContinuousClock.now - started }
            }
        }
        let store = try SQLiteStore(path: path, options: options)
        // Another connection holds SQLite's write lock for the whole test.
        let other = try SQLiteConnection(path: path)
        try other.execute("BEGIN IMMEDIATE")
        defer { try? other.execute("ROLLBACK") }
        try Self.fillPastThreshold(store)  // queues a background move
        #expect(await eventually(within: 20) { expiryReturned.withLock { $0 } != nil })
        let waited = try #require(expiryReturned.withLock { $0 })
        #expect(waited < .seconds(2), "the expiry waited \(waited) for the move")
        #expect(store.value(forKey: "k299") != nil)
    }

    /// A store released while another connection holds SQLite's write lock lets go within its
    /// brief wait (it waited SQLite's own busy handler, the whole 10 s lock timeout, holding the
    /// connection), and its records stay in the journal for the next store.
    @Test func aStoreReleasedWhileSQLiteIsLockedLetsGoAtOnce() throws {
        let path = TestFiles.uniquePath("release-while-locked")
        do {
            let store = try SQLiteStore(path: path)
            try store.setValue(.string("kept"), forKey: "last")
        }
        let other = try SQLiteConnection(path: path)
        try other.execute("BEGIN IMMEDIATE")
        let started = ContinuousClock.now
        do {
            let store = try SQLiteStore(path: path)
            try store.setValue(.string("kept too"), forKey: "later")
        }
        let released = ContinuousClock.now - started
        try other.execute("ROLLBACK")
        #expect(released < .seconds(3), "releasing the store took \(released)")
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.value(forKey: "last") == .string("kept"))
        #expect(reopened.value(forKey: "later") == .string("kept too"))
    }

    /// The same when another connection holds SQLite's file exclusively, so that even opening
    /// the release's connection (its first statement reads the schema) is busy: that wait is
    /// the release's brief one too (it was the lock timeout, 10 s).
    @Test func aStoreReleasedWhileSQLiteIsHeldExclusivelyLetsGoAtOnce() throws {
        let path = TestFiles.uniquePath("release-while-exclusive")
        let other: SQLiteConnection
        var started = ContinuousClock.now
        do {
            let store = try SQLiteStore(path: path)
            try store.setValue(.string("kept"), forKey: "last")
            other = try SQLiteConnection(path: path)
            try other.execute("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE")
            started = ContinuousClock.now
        }
        let released = ContinuousClock.now - started
        try other.execute("COMMIT")
        other.close()
        #expect(released < .seconds(3), "releasing the store took \(released)")
        #expect(try SQLiteStore(path: path).value(forKey: "last") == .string("kept"))
    }

    /// Background work that opens SQLite runs inside the system's background time.
    ///
    /// As checkpoints do: the watch catching up with records another store moved into SQLite before this one
    /// read them, and the move of a store's journal as the store is released (an app suspended
    /// holding SQLite's locks in an App Group container is ended). Refused, nothing is lost.
    @Test func backgroundWorkThatOpensSQLiteAsksForBackgroundTime() async throws {
        let path = TestFiles.uniquePath("background-time")
        let asked = Locked<[String]>([])
        let refuseClosing = Locked(false)
        // No look of the watch's own meanwhile: the test makes the look itself.
        var options = SQLiteStore.Options(refreshInterval: .seconds(3_600))
        options.faults.expiringActivity = { reason, respond in
            asked.withLock { $0.append(reason) }
            let refuse = reason.contains("closes") && refuseClosing.withLock { $0 }
            DispatchQueue.global().async { respond(refuse) }
        }
        let watching = try SQLiteStore(path: path, options: options)
        // The watch's first look, which it makes as it starts, is over before anything is written.
        #expect(await eventually { watching.core.watchLooks.load() >= 1 })
        // Another store writes and moves everything into SQLite before the watcher reads it.
        do {
            let writer = try SQLiteStore(path: path)
            for index in 0..<50 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            try writer.flush()
        }
        // The look the watch makes on its own thread (called here, so the test does not depend
        // on when the watch wakes): the records are gone from the journal, so it reads SQLite.
        let found = await Task.detached { watching.core.lookForChanges() }.value
        #expect(found)
        #expect(asked.withLock { $0 }.contains { $0.hasPrefix("reading other processes' changes") })
        #expect(watching.value(forKey: "k49") == .integer(49))

        // Released with records in its journal: the move asks for time; refused, they stay.
        do {
            let closing = try SQLiteStore(path: path, options: options)
            try closing.setValue(.string("kept"), forKey: "last")
            refuseClosing.withLock { $0 = true }
        }
        #expect(asked.withLock { $0 }.contains { $0.contains("as the store closes") })
        #expect(try SQLiteStore(path: path).value(forKey: "last") == .string("kept"))
    }

    /// A watcher whose records another store moved into SQLite, with the look that reads them
    /// started in the system's background time and `lookStarted` signalled as the system grants
    /// it; the expiry arrives 300 ms later, and `expiryTook` holds how long the expiry call waited.
    private static func watchLookingAtSQLite(
        _ path: String, expiryTook: Locked<Duration?>
    ) async throws -> SQLiteStore {
        let looking = Locked(false)
        var options = SQLiteStore.Options(refreshInterval: .seconds(3_600))
        options.faults.expiringActivity = { reason, respond in
            DispatchQueue.global().async { respond(false) }
            guard reason.hasPrefix("reading other processes' changes"), looking.withLock({ $0 }) else {
                return
            }
            DispatchQueue.global().async {
                usleep(300_000)  // the look is waiting by now
                let started = ContinuousClock.now
                respond(true)
                expiryTook.withLock { $0 = ContinuousClock.now - started }
            }
        }
        let watching = try SQLiteStore(path: path, options: options)
        #expect(await eventually { watching.core.watchLooks.load() >= 1 })
        do {
            let writer = try SQLiteStore(path: path)
            for index in 0..<50 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            try writer.flush()
        }
        looking.withLock { $0 = true }
        return watching
    }

    /// The watch's look at SQLite, cut short by the system while another process holds SQLite
    /// locked: the expiry call returns at once, not after the store's lock timeout (10 s), so
    /// the app is not held past its background time; the next look reads what was missed.
    @Test func anExpiryCutsTheWatchsWaitForSQLiteShort() async throws {
        let path = TestFiles.uniquePath("expiry-cuts-look")
        let expiryTook = Locked<Duration?>(nil)
        let watching = try await Self.watchLookingAtSQLite(path, expiryTook: expiryTook)
        // Another connection holds SQLite's file exclusively: every read of it is busy.
        let other = try SQLiteConnection(path: path)
        try other.execute("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE")
        _ = await Task.detached { watching.core.lookForChanges() }.value
        // The expiry call returns a moment after the look does (it waits for the look's end).
        #expect(await eventually { expiryTook.withLock { $0 } != nil })
        let waited = try #require(expiryTook.withLock { $0 })
        #expect(waited < .seconds(2), "the expiry waited \(waited) for the watch's look")
        try other.execute("COMMIT")
        other.close()
        // Nothing was lost: the next look (or read) reads SQLite.
        #expect(watching.value(forKey: "k49") == .integer(49))
    }

    /// The same while another thread of the app uses the store's connection (a flush waiting for
    /// a lock): the look stops waiting for the connection when the expiry comes.
    @Test func anExpiryCutsTheWatchsWaitForTheConnectionShort() async throws {
        let path = TestFiles.uniquePath("expiry-cuts-connection")
        let expiryTook = Locked<Duration?>(nil)
        let watching = try await Self.watchLookingAtSQLite(path, expiryTook: expiryTook)
        let holding = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? watching.core.sqlite.withDatabase(during: "a test's long use") { _ in
                holding.signal()
                usleep(5_000_000)
            }
        }
        holder.start()
        holding.wait()
        _ = await Task.detached { watching.core.lookForChanges() }.value
        // The expiry call returns a moment after the look does (it waits for the look's end).
        #expect(await eventually { expiryTook.withLock { $0 } != nil })
        let waited = try #require(expiryTook.withLock { $0 })
        #expect(waited < .seconds(2), "the expiry waited \(waited) for the connection")
        #expect(watching.value(forKey: "k49") == .integer(49))
    }

    /// A write that moves the journal itself, past its limit, asks for background time first,
    /// as every move does (it opened SQLite without it: an app going to the background could be
    /// suspended holding SQLite's locks); refused, the write goes on and moves nothing.
    @Test(arguments: [false, true])
    func aMoveInLineRunsInsideBackgroundTime(refused: Bool) throws {
        let path = TestFiles.uniquePath("inline-background-time")
        let asked = Locked<[String]>([])
        var options = SQLiteStore.Options()
        options.faults.refusedCheckpointRetry = .seconds(3_600)
        options.faults.expiringActivity = { reason, respond in
            asked.withLock { $0.append(reason) }
            // Background moves are never answered (the system has not got to them), so every
            // move here is the writer's own; the store's release is given its time.
            if reason.hasSuffix("into SQLite") { return }
            DispatchQueue.global().async { respond(refused && reason.contains("passed its limit")) }
        }
        options.faults.journalLimit = 4 << 20
        let store = try SQLiteStore(path: path, options: options)
        let big = String(repeating: "y", count: 1 << 20)
        var round = 0
        while (store.core.journal?.usedBytes ?? 0) <= store.core.journalLimit {
            try store.setValue(.string(big), forKey: "big\(round % 8)")
            round += 1
        }
        try store.setValue(.integer(1), forKey: "past the limit")
        #expect(
            asked.withLock { $0 }.contains { $0.contains("passed its limit") }, "\(asked.withLock { $0 })")
        let rows = try Self.rowsInSQLite(path)
        #expect(refused ? rows == 0 : rows > 0, "\(rows) rows")
        #expect(store.value(forKey: "past the limit") == .integer(1))
        #expect(store.value(forKey: "big0") == .string(big))
    }

    /// Erasing removed values runs inside background time.
    ///
    /// A secret's migration runs it, often at launch; it moves the journal and rebuilds SQLite's
    /// file, as every long use of SQLite does inside background time (it ran
    /// on the caller's thread, holding SQLite's locks). Refused, it throws `.expired` having
    /// erased nothing, and a later call erases.
    @Test func erasingRemovedValuesRunsInsideBackgroundTime() throws {
        let path = TestFiles.uniquePath("erase-background")
        let asked = Locked<[String]>([])
        let refusing = Locked(true)
        var options = SQLiteStore.Options()
        options.faults.expiringActivity = Self.system(recording: asked, refusing: "erasing", while: refusing)
        let store = try SQLiteStore(path: path, options: options)
        let secret = "never-in-a-file-erased-in-background-time"
        try store.setValue(.string(secret), forKey: "token")
        try store.flush()
        try store.setValue(nil, forKey: "token")
        let refused = #expect(throws: StoreError.self) { try store.core.eraseRemovedValues() }
        #expect(refused?.kind == .expired)
        #expect(
            SecretFiles.holding(secret, under: URL(fileURLWithPath: path).deletingLastPathComponent()) != [])

        refusing.withLock { $0 = false }
        try store.core.eraseRemovedValues()
        #expect(asked.withLock { $0 }.filter { $0.hasPrefix("erasing removed values") }.count == 2)
        #expect(
            SecretFiles.holding(secret, under: URL(fileURLWithPath: path).deletingLastPathComponent()) == [])
    }

    /// Copying a `UserDefaults` domain in runs inside background time.
    ///
    /// An app's first launch after moving to SQLite; it holds SQLite's write lock and the
    /// journal's through a syncing commit (it ran on the caller's thread). Refused, it throws `.expired` having copied nothing, and
    /// is not marked done, so the next launch copies.
    @Test func copyingADomainInRunsInsideBackgroundTime() throws {
        let asked = Locked<[String]>([])
        let refusing = Locked(true)
        var options = SQLiteStore.Options()
        options.faults.expiringActivity = Self.system(recording: asked, refusing: "copying", while: refusing)
        let store = try SQLiteStore(path: TestFiles.uniquePath("copy-background"), options: options)
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        defaults.set("Zhuo", forKey: "name")
        #expect(defaults.synchronize())

        let refused = #expect(throws: StoreError.self) {
            try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        }
        #expect(refused?.kind == .expired)
        #expect(store.value(forKey: "name") == nil)

        refusing.withLock { $0 = false }
        let report = try store.copyValues(fromUserDefaultsDomain: suite, using: defaults)
        #expect(report.copied == ["name"])
        #expect(store.value(forKey: "name") == .string("Zhuo"))
        #expect(asked.withLock { $0 }.filter { $0.hasPrefix("copying values into") }.count == 2)
    }

    /// While the system refuses background time, a write past the journal's limit does not move
    /// the journal on its own thread (that could outlast the time an app in the background has).
    @Test func aWritePastTheLimitMovesNothingInLineWhileRefused() throws {
        let path = TestFiles.uniquePath("refused-inline")
        var options = SQLiteStore.Options()
        options.faults.refusedCheckpointRetry = .seconds(3_600)
        options.faults.expiringActivity = { _, respond in DispatchQueue.global().async { respond(true) } }
        options.faults.journalLimit = 4 << 20  // reached in a few writes (64 MiB in an app)
        let store = try SQLiteStore(path: path, options: options)
        try Self.fillPastThreshold(store)
        let deadline = Date().addingTimeInterval(10)
        while store.core.checkpointer.refused.load() == 0 && Date() < deadline { usleep(10_000) }
        #expect(store.core.checkpointer.refused.load() == 1)
        let limit = store.core.journalLimit
        let big = String(repeating: "y", count: 1 << 20)
        var round = 0
        while (store.core.journal?.usedBytes ?? 0) <= limit {
            try store.setValue(.string(big), forKey: "big\(round % 8)")
            round += 1
        }
        try store.setValue(.integer(1), forKey: "past the limit")
        #expect(try Self.rowsInSQLite(path) == 0, "a write moved the journal in line while refused")
        #expect(store.value(forKey: "past the limit") == .integer(1))
    }

    /// A `stop()` called from another watcher's queue still waits for this watcher's running
    /// look (one queue key per watcher; with one key for all it returned at once).
    @Test func stoppingFromAnotherWatchersQueueWaitsForTheRunningLook() {
        let lookStarted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let lookFinished = Locked(false)
        let first = JournalWatch(
            journal: nil, interval: .seconds(3_600), wantsWakeups: { false },
            look: {
                lookStarted.signal()
                release.wait()
                lookFinished.withLock { $0 = true }
                return false
            })
        lookStarted.wait()
        let returnedBeforeTheLookEnded = Locked<Bool?>(nil)
        let stopped = DispatchSemaphore(value: 0)
        let second = JournalWatch(
            journal: nil, interval: .seconds(3_600), wantsWakeups: { false },
            look: {
                guard returnedBeforeTheLookEnded.withLock({ $0 }) == nil else { return false }
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { release.signal() }
                first.stop()
                returnedBeforeTheLookEnded.withLock { $0 = !lookFinished.withLock { $0 } }
                stopped.signal()
                return false
            })
        stopped.wait()
        #expect(returnedBeforeTheLookEnded.withLock { $0 } == false)
        second.stop()
    }
}

#if os(Linux)
    /// A store that can only read: it learns of other processes' writes within a second, and
    /// holds no SQLite connection between calls (its `-shm` lock would be held forever).
    @Suite(
        .enabled(
            if: getuid() == 0,
            "a read-only view of a folder is a bind mount, which needs root (CI runs as root)"))
    struct ReadOnlyStoreTests {
        /// The descriptors of this process open on `path` or its `-wal`/`-shm` for reading or
        /// writing (an `O_PATH` descriptor, the file check's, only names the file: no lock).
        private static func descriptors(on path: String) -> [String] {
            let folder = "/proc/self/fd"
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            return entries.compactMap { entry in
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(entry)")
                guard let target, target == path || target == path + "-wal" || target == path + "-shm" else {
                    return nil
                }
                let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(entry)", encoding: .utf8)) ?? ""
                let flags = info.split(separator: "\n").first { $0.hasPrefix("flags:") }
                    .flatMap {
                        Int($0.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
                    }
                if let flags, flags & 0o10_000_000 != 0 { return nil }  // O_PATH
                return target
            }
        }

        @Test func aReadOnlyStoreHoldsNoConnectionAndSeesWritesWithinASecond() async throws {
            let view = try ReadOnlyView()
            defer { view.remove() }
            let writer = try view.writerHoldingFirst()
            let readOnlyPath = view.readOnlyPath
            let reader = try SQLiteStore(path: readOnlyPath)
            #expect(reader.value(forKey: "name") == .string("first"))
            #expect(throws: StoreError.self) { try reader.setValue(.integer(1), forKey: "refused") }
            #expect(reader.watch.lookInterval <= .seconds(1))
            #expect(
                await eventually(within: 3) { Self.descriptors(on: readOnlyPath) == [] },
                "the read-only store keeps SQLite open")
            // Another writer's change, moved into SQLite, reaches the reader's observers.
            let heard = Locked<[StoreChange]>([])
            let observation = reader.observe { change in heard.withLock { $0.append(change) } }
            try writer.setValue(.string("second"), forKey: "name")
            try writer.flush()
            // A look a second after the last (the interval is checked above); the bound allows
            // for a loaded machine (CI runs every suite at once under ThreadSanitizer, where a
            // look once came after more than 3 s).
            #expect(await eventually(within: 10) { reader.value(forKey: "name") == .string("second") })
            #expect(await eventually(within: 10) { !heard.withLock { $0 }.isEmpty })
            // Between calls: a look that just caught up may still be closing its connection.
            #expect(
                await eventually(within: 3) { Self.descriptors(on: readOnlyPath) == [] },
                "the read-only store keeps SQLite open")
            observation.cancel()
        }
    }

    extension ReadOnlyStoreTests {
        /// A store that only reads reads SQLite again when it sees it behind the journal.
        ///
        /// Through a read-only mount, once the writers closed SQLite, its connection is immutable
        /// (SQLite cannot make its `-shm` file) and reads the database file alone, which lacks a
        /// checkpoint still in the WAL: seen once, a moment after a writer's flush. It reads again
        /// rather than take the records between as lost, which would have left the cache without
        /// them until the keys changed again.
        @Test func aReadOnlyStoreThatSeesAnOlderSnapshotReadsAgain() throws {
            let view = try ReadOnlyView()
            defer { view.remove() }
            let writer = try view.writerHoldingFirst()
            defer { withExtendedLifetime(writer) {} }  // open for the whole test, as an app's would be
            let olderReads = Locked(0)
            let recorder = IssueRecorder()
            var options = SQLiteStore.Options()
            options.diagnostics = recorder.diagnostics
            options.faults.seeOlderRows = {
                olderReads.withLock { left in
                    defer { left = max(0, left - 1) }
                    return left > 0
                }
            }
            let reader = try SQLiteStore(path: view.readOnlyPath, options: options)
            #expect(reader.value(forKey: "name") == .string("first"))
            // Another process writes and closes its store, which moves the write into SQLite and
            // out of the journal: the reader then reads it from SQLite. (Its watch, which looks
            // once a second, could catch the write in the journal in the moment before the move:
            // then the round is tried again.)
            var readFromSQLite = false
            for round in 0..<3 where !readFromSQLite {
                olderReads.withLock { $0 = 3 }
                let set = try Helper.run(["sqlite-set", view.writablePath, "name", "round \(round)"])
                try #require(set.status == 0, "\(set.stderr)")
                #expect(reader.value(forKey: "name") == .string("round \(round)"))
                readFromSQLite = olderReads.withLock { $0 } == 0
            }
            #expect(readFromSQLite, "the reader met the older snapshot")
            #expect(
                !recorder.issues.contains { "\($0)".contains("in neither the journal nor SQLite") },
                "\(recorder.issues)")
        }
    }

    /// A folder and a read-only view of it (a read-only bind mount): a store opened through the
    /// view can only read, while another writes the same files through the folder.
    struct ReadOnlyView {
        let writable: URL
        let readOnly: URL

        init() throws {
            writable = TestFiles.folder.appendingPathComponent("rw-\(UUID().uuidString)")
            readOnly = TestFiles.folder.appendingPathComponent("ro-view-\(UUID().uuidString)")
            for folder in [writable, readOnly] {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            }
            guard try ReadOnlyFolder.shell("mount", "--bind", writable.path, readOnly.path) == 0,
                try ReadOnlyFolder.shell("mount", "-o", "remount,bind,ro", readOnly.path) == 0
            else { throw TestFailure("cannot make a read-only bind mount at \(readOnly.path)") }
        }

        /// The store's file in the folder, and the same file through the read-only view.
        var writablePath: String { writable.appendingPathComponent("shared.sqlite").path }
        var readOnlyPath: String { readOnly.appendingPathComponent("shared.sqlite").path }

        /// A store of the folder's file holding `name` = "first", moved into SQLite.
        func writerHoldingFirst() throws -> SQLiteStore {
            let writer = try SQLiteStore(path: writablePath)
            try writer.setValue(.string("first"), forKey: "name")
            try writer.flush()
            return writer
        }

        func remove() {
            _ = try? ReadOnlyFolder.shell("umount", "-l", readOnly.path)
            try? FileManager.default.removeItem(at: writable)
            try? FileManager.default.removeItem(at: readOnly)
        }
    }
#endif
