#if os(macOS) || os(Linux)
    import CPrefsShared
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsEngine
    import PrefsSupport

    /// The journal's cross-process lock excludes every thread of the process too.
    ///
    /// Whichever kind it is: CI runs this suite (and every SQLite suite) twice: with Linux's robust mutex, and
    /// with `PREFS_JOURNAL_LOCK=flock`, the lock Apple platforms use.
    @Suite struct SQLiteJournalLockTests {
        private func journal(of store: SQLiteStore) throws -> Journal {
            try #require(store.core.journal)
        }

        @Test func aNewJournalRecordsTheLockTheProcessUses() throws {
            let store = try SQLiteStore(path: TestFiles.uniquePath())
            let journal = try journal(of: store)
            #expect(journal.lock.kind == prefs_lock_kind_of_process())
            #expect(journal.word32(Journal.Layout.lockKindOffset).pointee == UInt32(journal.lock.kind))
            if ProcessInfo.processInfo.environment["PREFS_JOURNAL_LOCK"] == "flock" {
                #expect(journal.lock.kind == Int32(PREFS_LOCK_KIND_FLOCK))
            }
        }

        /// Threads of one process, through one store and through a second store of the same file,
        /// never hold the lock together. (With `flock` alone, which belongs to the open file
        /// description, a probe like this one saw thousands of overlaps.)
        @Test func theLockExcludesEveryThreadOfTheProcess() throws {
            let path = TestFiles.uniquePath()
            let first = try SQLiteStore(path: path)
            let second = try SQLiteStore(path: path)
            let journals = [try journal(of: first), try journal(of: second)]
            let inside = AtomicWord()
            let overlaps = AtomicWord()
            let entries = AtomicWord()
            onThreads(6) { thread in
                let journal = journals[thread % 2]
                for _ in 0..<2_000 {
                    try? journal.withLock(timeout: .seconds(30)) { _ in
                        if inside.add(1) != 1 {
                            overlaps.add(1)
                        }
                        entries.add(1)
                        for _ in 0..<20 { sched_yield() }
                        inside.subtract(1)
                    }
                }
            }
            #expect(entries.load() == 12_000)
            #expect(overlaps.load() == 0)
        }

        /// Several threads write through two stores of one file while checkpoints run (4 KB values
        /// fill the 1 MiB threshold every 250 writes, and a thread flushes in a loop): every write
        /// and every increment is there afterwards, read by a fresh store.
        @Test func threadsWritingWhileCheckpointsRunLoseNothing() throws {
            let path = TestFiles.uniquePath()
            let stores = [try SQLiteStore(path: path), try SQLiteStore(path: path)]
            let payload = String(repeating: "x", count: 4_000)
            let writers = 4
            let writes = 400
            let done = AtomicWord()
            onThreads(writers + 2) { thread in
                switch thread {
                case writers:
                    while done.load() == 0 { try? stores[0].flush() }
                case writers + 1:
                    for _ in 0..<writes {
                        try? stores[1].transaction { t in
                            guard case .integer(let count)? = t["count"] else {
                                t["count"] = .integer(1)
                                return
                            }
                            t["count"] = .integer(count + 1)
                        }
                    }
                default:
                    let store = stores[thread % 2]
                    for index in 0..<writes {
                        try? store.setValue(
                            .string("\(index) \(payload)"), forKey: "t\(thread)-\(index % 50)")
                        try? store.setValue(.integer(Int64(index)), forKey: "t\(thread)-last")
                    }
                    if thread == 0 {
                        // The flushing thread stops once every writer is likely done; the check
                        // below does not depend on it.
                        done.store(1)
                    }
                }
            }
            done.store(1)
            let reopened = try SQLiteStore(path: path)
            #expect(reopened.value(forKey: "count") == .integer(Int64(writes)))
            for thread in 0..<writers {
                #expect(reopened.value(forKey: "t\(thread)-last") == .integer(Int64(writes - 1)))
                for key in 0..<50 {
                    let last = writes - 50 + key
                    #expect(reopened.value(forKey: "t\(thread)-\(key)") == .string("\(last) \(payload)"))
                }
            }
        }

        /// Opening a second store of the same file inside a transaction on the first fails at once
        /// with `.deadlock`, saying why, instead of waiting for the lock its own thread holds.
        @Test func openingTheSameFileInsideATransactionFailsAtOnce() throws {
            let path = TestFiles.uniquePath()
            // A waiting open would end at the timeout with another message.
            let store = try SQLiteStore(path: path, options: .init(lockTimeout: .seconds(5)))
            let thrown = try store.transaction { t -> StoreError? in
                t["a"] = .integer(1)
                do {
                    _ = try SQLiteStore(path: path, options: .init(lockTimeout: .seconds(5)))
                    return nil
                } catch let error as StoreError {
                    return error
                }
            }
            let error = try #require(thrown)
            #expect(error.kind == .deadlock)
            #expect(error.message.contains("wait for itself"), "\(error.message)")
        }
    }
#endif
