#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsEngine

    /// One flipped bit in the journal's header loses nothing.
    ///
    /// The store either opens with every acknowledged write (the records keep their own checksums) or refuses to open with an error that names
    /// the problem, leaving the journal where it was. It never decides, from a damaged header,
    /// that the records are another database's and sets them aside.
    @Suite struct JournalHeaderDamageTests {
        private typealias Layout = Journal.Layout
        private static let records = 20

        /// A crashed store whose writes are only in the journal, copied once per flip.
        private static let crashed: Result<String, any Error> = Result {
            try JournalFiles.crashedStore(records: records)
        }

        /// Every bit of the bytes listed, in copies of a crashed store.
        private static func flipEach(bits: [(byte: Int, bit: Int)]) throws -> [String] {
            let original = try crashed.get()
            var problems: [String] = []
            for (byte, bit) in bits {
                let copy = try JournalFiles.copyOfLiveStore(original)
                try JournalFiles.editJournal(copy) { $0[byte] ^= UInt8(1 << bit) }
                let what = "byte \(byte) bit \(bit)"
                do {
                    var options = SQLiteStore.Options()
                    options.diagnostics = PreferenceDiagnostics { _ in }
                    let store = try SQLiteStore(path: copy, options: options)
                    let missing = (0..<records).filter {
                        store.value(forKey: "k\($0)") != .integer(Int64($0))
                    }
                    if !missing.isEmpty { problems.append("\(what): opened without k\(missing)") }
                } catch let error as StoreError {
                    // Refused, saying why: the journal must still be there, untouched but for the flip.
                    if !FileManager.default.fileExists(atPath: copy + "-prefs") {
                        problems.append("\(what): refused (\(error.kind)) and the journal is gone")
                    }
                }
                let aside = try FileManager.default.contentsOfDirectory(atPath: TestFiles.folder.path)
                    .filter { $0.hasPrefix((copy as NSString).lastPathComponent + "-prefs.") }
                if !aside.isEmpty { problems.append("\(what): the journal was set aside as \(aside)") }
            }
            return problems
        }

        /// Both copies of the database's identity, every bit: the two flips the independent
        /// harness found (bytes 106 and 111) made the store take the journal for another
        /// database's and set every write not yet in SQLite aside.
        @Test func aFlippedBitInTheIdentityLosesNothing() throws {
            let bytes = Layout.databaseIDOffset..<(Layout.databaseIDCopyOffset + 8)
            let problems = try Self.flipEach(bits: bytes.flatMap { byte in (0..<8).map { (byte, $0) } })
            #expect(problems.isEmpty, "\(problems)")
        }

        /// A base above what SQLite held when a store loaded is not damage when another store
        /// checkpointed in between: the new store reads every value, the rows moved meanwhile
        /// included. (Lowering the base against that stale mark lost writes under load, which
        /// `SQLiteJournalLockTests.threadsWritingWhileCheckpointsRunLoseNothing` caught.)
        @Test func aCheckpointWhileAnotherStoreOpensIsNotTakenForDamage() throws {
            let path = TestFiles.uniquePath("checkpoint-while-opening")
            let writer = try SQLiteStore(path: path)
            for index in 0..<50 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index % 5)") }
            try writer.flush()
            for index in 50..<100 { try writer.setValue(.integer(Int64(index)), forKey: "k\(index % 5)") }
            var options = SQLiteStore.Options()
            // Between the new store's load of SQLite and its opening of the journal, the writer
            // moves everything into SQLite and drops it from the journal.
            options.faults.afterLoadingRows = {
                do { try writer.flush() } catch { Issue.record("the flush failed: \(error)") }
            }
            let reader = try SQLiteStore(path: path, options: options)
            for key in 0..<5 {
                #expect(reader.value(forKey: "k\(key)") == .integer(Int64(95 + key)), "k\(key)")
            }
        }

        /// A damaged field near the top of its range is damage to repair, never a trap.
        ///
        /// As a 64-bit field reads on a watch once its high half is dropped: an interrupted move's
        /// length near `Int.max` overflowed the check meant to refuse it, and stopped the program
        /// at the first repair; a size past the file is repaired. Each store opens with every
        /// write.
        @Test(arguments: [
            (Layout.moveFromOffset, UInt64(Layout.headerSize) + 4096),
            (Layout.moveLengthOffset, UInt64(Int.max) - 100),
            (Layout.fileSizeOffset, UInt64.max - 4096),
            (Layout.writeOffsetOffset, UInt64(Int.max)),
        ])
        func aFieldNearTheTopOfItsRangeIsDamageNotATrap(offset: Int, value: UInt64) throws {
            let copy = try JournalFiles.copyOfLiveStore(try Self.crashed.get())
            // A move note's source comes with a length near the top, so the note reaches its check.
            var fields = [(offset, value)]
            if offset == Layout.moveFromOffset {
                fields.append((Layout.moveLengthOffset, UInt64(Int.max) - 100))
            }
            try JournalFiles.editJournal(copy) { bytes in
                for (field, stored) in fields {
                    withUnsafeBytes(of: stored.littleEndian) {
                        bytes.replaceSubrange(field..<(field + 8), with: $0)
                    }
                }
            }
            var options = SQLiteStore.Options()
            options.diagnostics = PreferenceDiagnostics { _ in }
            let store = try SQLiteStore(path: copy, options: options)
            let missing = (0..<Self.records).filter { store.value(forKey: "k\($0)") != .integer(Int64($0)) }
            #expect(missing.isEmpty)
            try store.setValue(.string("after"), forKey: "after")
            #expect(store.value(forKey: "after") == .string("after"))
        }

        /// Every other field of the header a flip can reach (the lock's bytes aside): one bit per
        /// byte in a developer's `swift test`, every bit with `CI=true`.
        @Test func aFlippedBitAnywhereInTheHeaderLosesNothing() throws {
            let bitsPerByte = stressRounds(local: 1, ci: 8)
            let bytes = (0..<Layout.lockOffset).filter {
                !(Layout.databaseIDOffset..<Layout.lockOffset).contains($0)
            }
            let bits = bytes.flatMap { byte in (0..<bitsPerByte).map { (byte, (byte + $0) % 8) } }
            let problems = try Self.flipEach(bits: bits)
            #expect(problems.isEmpty, "\(problems.count) of \(bits.count) flips: \(problems)")
        }
    }
#endif
