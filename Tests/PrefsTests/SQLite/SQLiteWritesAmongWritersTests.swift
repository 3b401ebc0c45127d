import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A write of one value made while other stores write to the file (issue "Ahead of MMKV", item
/// 3): it appends its record without applying theirs (`SQLiteStoreCore.appendAlone`), unless
/// something here observes the store, and never after a record readers would stop at.
@Suite struct SQLiteWritesAmongWritersTests {
    /// A store that catches up only when it reads or writes: its watch's one timed look an hour
    /// away, and its first look (when it starts, which may be late on a busy machine) done.
    private func quietStore(_ path: String) async throws -> SQLiteStore {
        let store = try SQLiteStore(path: path, options: .init(refreshInterval: .seconds(3_600)))
        #expect(await eventually { store.core.watchLooks.load() == 1 })
        return store
    }

    /// Two stores of one file, `first` a quiet one; `first` wrote last, then `second` wrote
    /// `count` values.
    private func twoStores(secondWrites count: Int = 1) async throws -> (
        path: String, first: SQLiteStore, second: SQLiteStore
    ) {
        let path = TestFiles.uniquePath("among")
        let first = try await quietStore(path)
        let second = try SQLiteStore(path: path)
        try first.setValue(.integer(1), forKey: "first")
        for index in 0..<count { try second.setValue(.integer(Int64(index)), forKey: "second\(index)") }
        return (path, first, second)
    }

    /// The write leaves the cache where it was; the next read applies the other store's records
    /// and this one, in order, and every other store sees both.
    @Test func aWriteAfterAnotherStoresLeavesTheirRecordsToTheNextRead() async throws {
        let (path, first, second) = try await twoStores(secondWrites: 3)
        let journal = try #require(first.core.journal)
        let before = first.core.cache.position
        try first.setValue(.integer(2), forKey: "first")
        try first.setValue(.integer(3), forKey: "first")
        #expect(first.core.cache.position == before, "nothing applied by the writes")
        #expect(journal.sequence == before + 5)
        #expect(first.value(forKey: "second2") == .integer(2))
        #expect(first.value(forKey: "first") == .integer(3))
        #expect(first.core.cache.position == journal.sequence)
        #expect(second.value(forKey: "first") == .integer(3))
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.value(forKey: "first") == .integer(3))
        #expect(reopened.value(forKey: "second0") == .integer(0))
    }

    /// With an observer, the write applies what the other store wrote and its own value before
    /// it returns, and the observer hears both, in order.
    @Test func aWriteWithAnObserverAppliesEveryRecordBeforeItReturns() async throws {
        let (_, first, _) = try await twoStores()
        let heard = Locked<[String]>([])
        let observation = first.observe { change in
            heard.withLock { $0 += change.values.keys.map(\.name).sorted() }
        }
        try first.setValue(.integer(2), forKey: "first")
        first.core.observers.waitForDelivery()
        #expect(heard.withLock { $0 } == ["second0", "first"])
        #expect(first.core.cache.position == first.core.journal?.sequence)
        withExtendedLifetime(observation) {}
    }

    /// A record of another store that fails its checksum: the write does not land after it
    /// (where readers stop, and a repair cuts); the damage is cut first and the write is kept.
    @Test func aWriteNeverLandsAfterADamagedRecord() async throws {
        let path = TestFiles.uniquePath("among-damaged")
        let first = try await quietStore(path)
        let second = try SQLiteStore(path: path)
        try first.setValue(.integer(1), forKey: "first")
        let journal = try #require(second.core.journal)
        let start = journal.writeOffset
        try second.setValue(.string("damaged"), forKey: "second")
        // One byte of the record's key, flipped in the file (the mapping is the file's).
        let descriptor = open(journal.path, O_RDWR)
        try #require(descriptor >= 0)
        var byte: UInt8 = 0
        #expect(pread(descriptor, &byte, 1, off_t(start + JournalRecord.headerSize + 8)) == 1)
        byte ^= 0xFF
        #expect(pwrite(descriptor, &byte, 1, off_t(start + JournalRecord.headerSize + 8)) == 1)
        close(descriptor)

        try first.setValue(.integer(2), forKey: "first")
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.value(forKey: "first") == .integer(2), "the acknowledged write is kept")
        #expect(reopened.value(forKey: "second") == nil, "the damaged record is cut")
        #expect(first.value(forKey: "first") == .integer(2))
    }

    /// Records moved into SQLite by a checkpoint since the last look: the write goes the usual
    /// way (the records' places changed), and nothing is lost.
    @Test func aWriteAfterACheckpointMovedTheRecordsKeepsEverything() async throws {
        let (path, first, second) = try await twoStores(secondWrites: 2)
        try first.setValue(.integer(2), forKey: "first")  // appended alone
        try second.setValue(.integer(9), forKey: "second1")
        try second.flush()  // moves every record into SQLite
        try first.setValue(.integer(3), forKey: "first")
        #expect(first.value(forKey: "second1") == .integer(9))
        #expect(first.value(forKey: "first") == .integer(3))
        let reopened = try SQLiteStore(path: path)
        #expect(
            reopened.snapshot() == ["first": .integer(3), "second0": .integer(0), "second1": .integer(9)])
    }

    /// A thread reading a store while its own writes append alone (another store of the file
    /// writing all the while) never reads a value older than one whose write had returned, its
    /// own store's or the other's; every write is there afterwards.
    @Test func readsFollowWritesThatAppendAlone() async throws {
        let path = TestFiles.uniquePath("among-threads")
        let first = try await quietStore(path)
        let second = try SQLiteStore(path: path)
        let writes = 3_000
        let acknowledgedA = AtomicWord(UInt64(bitPattern: -1))
        let acknowledgedB = AtomicWord(UInt64(bitPattern: -1))
        let failures = Locked<[String]>([])
        let done = AtomicWord()
        onThreads(3) { thread in
            guard thread < 2 else {
                while done.load() < 2 {
                    for key in ["a", "b"] {
                        let floor = Int64(bitPattern: (key == "a" ? acknowledgedA : acknowledgedB).load())
                        if case .integer(let read)? = first.value(forKey: key) ?? .integer(-1), read >= floor
                        {
                            continue
                        }
                        failures.withLock { $0.append("\(key) read below \(floor)") }
                    }
                }
                return
            }
            let (store, key) = thread == 0 ? (first, "a") : (second, "b")
            for index in 0..<writes {
                do {
                    try store.setValue(.integer(Int64(index)), forKey: key)
                    if thread == 0 {
                        acknowledgedA.store(UInt64(index))
                    } else {
                        acknowledgedB.store(UInt64(index))
                    }
                } catch {
                    failures.withLock { $0.append("write \(index) of \(key): \(error)") }
                }
            }
            done.add(1)
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.value(forKey: "a") == .integer(Int64(writes - 1)))
        #expect(reopened.value(forKey: "b") == .integer(Int64(writes - 1)))
        #expect(first.value(forKey: "b") == .integer(Int64(writes - 1)))
    }

    /// A store that only reads catches up without the journal's lock from one copy of the
    /// records; while checkpoints move them under it, it never applies what it copied mid-move:
    /// every value it reads was written, none older than one acknowledged before the read.
    @Test func readsWhileCheckpointsMoveTheRecordsSeeOnlyWrittenValues() async throws {
        let path = TestFiles.uniquePath("among-moves")
        let reader = try await quietStore(path)
        let writer = try SQLiteStore(path: path)
        let writes = 4_000
        let acknowledged = AtomicWord(UInt64(bitPattern: -1))
        let done = AtomicWord()
        let failures = Locked<[String]>([])
        onThreads(3) { thread in
            switch thread {
            case 0:
                for index in 0..<writes {
                    try? writer.setValue(.integer(Int64(index)), forKey: "n")
                    try? writer.setValue(.string("filler \(index)"), forKey: "f\(index % 64)")
                    acknowledged.store(UInt64(index))
                }
                done.store(1)
            case 1:
                while done.load() == 0 { try? writer.flush() }
            default:
                var last = -1
                while done.load() == 0 {
                    let floor = Int64(bitPattern: acknowledged.load())
                    switch reader.value(forKey: "n") {
                    case .integer(let value) where value >= floor && value >= last && value < writes:
                        last = Int(value)
                    case nil where floor < 0:
                        break
                    case let other:
                        failures.withLock {
                            $0.append("read \(String(describing: other)) after \(floor), \(last)")
                        }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        #expect(reader.value(forKey: "n") == .integer(Int64(writes - 1)))
        let reopened = try SQLiteStore(path: path)
        #expect(reopened.value(forKey: "n") == .integer(Int64(writes - 1)))
        #expect(reopened.value(forKey: "f\((writes - 1) % 64)") == .string("filler \(writes - 1)"))
    }

    /// Records moved (another store's checkpoint, then new records where they were) between a
    /// reader's look at where they end and its copy of them: the copy is thrown away and the
    /// read goes on from SQLite, every value there (without the generation's check, the reader
    /// took the new records for the old ones' followers and never read the old ones).
    @Test func aCopyOfRecordsThatMovedMeanwhileIsThrownAway() async throws {
        let path = TestFiles.uniquePath("among-moved")
        let writer = try SQLiteStore(path: path)
        let moved = Locked(false)
        var options = SQLiteStore.Options(refreshInterval: .seconds(3_600))
        options.faults.beforeCopyingRecords = {
            guard
                !moved.withLock({ moved in
                    defer { moved = true }
                    return moved
                })
            else { return }
            // Every record moved into SQLite and dropped, and as many new ones of the same size
            // written where they were.
            try? writer.flush()
            for index in 0..<10 { try? writer.setValue(.integer(Int64(index + 100)), forKey: "y\(index)") }
        }
        let reader = try SQLiteStore(path: path, options: options)
        #expect(await eventually { reader.core.watchLooks.load() == 1 })
        for index in 0..<10 { try writer.setValue(.integer(Int64(index)), forKey: "x\(index)") }
        #expect(reader.value(forKey: "x0") == .integer(0))
        #expect(moved.withLock { $0 }, "the records moved under the read")
        for index in 0..<10 {
            #expect(reader.value(forKey: "x\(index)") == .integer(Int64(index)))
            #expect(reader.value(forKey: "y\(index)") == .integer(Int64(index + 100)))
        }
    }
}
