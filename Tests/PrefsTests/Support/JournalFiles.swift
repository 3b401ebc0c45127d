#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import Prefs
    @testable import PrefsEngine

    /// Stores left as a crash leaves them, read by fresh processes, and their journals edited
    /// byte by byte: what the journal tests damage and check.
    enum JournalFiles {
        /// The values a store at `path` holds, read by a fresh process (which also reports on
        /// stderr what it repaired).
        static func dump(_ path: String) throws -> (values: [String: String], stderr: String) {
            let output = try Helper.run(["sqlite-dump", path])
            #expect(output.status == 0, "\(output.stderr)")
            var values: [String: String] = [:]
            for line in output.stdout.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
            }
            return (values, output.stderr)
        }

        /// A store whose last writes (`k<i>` = i) are only in the journal (as a crash leaves
        /// it): the files are copied while the writing store is still open.
        static func crashedStore(records: Int) throws -> String {
            let live = TestFiles.uniquePath("live")
            let store = try SQLiteStore(path: live)
            for index in 0..<records { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
            let copy = try copyOfLiveStore(live)
            withExtendedLifetime(store) {}
            return copy
        }

        /// A copy of the files of a store that is still open (as a crash would leave them).
        static func copyOfLiveStore(_ live: String) throws -> String {
            let copy = TestFiles.uniquePath("crashed")
            for suffix in ["", "-wal", "-shm", "-prefs"]
            where FileManager.default.fileExists(atPath: live + suffix) {
                try FileManager.default.copyItem(atPath: live + suffix, toPath: copy + suffix)
            }
            return copy
        }

        /// The offsets of the records in a journal file.
        static func recordOffsets(_ journal: Data) -> [Int] {
            var offsets: [Int] = []
            var offset = Journal.Layout.headerSize
            while offset + 4 <= journal.count {
                let length = Int(
                    journal[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
                if length == 0 { break }
                offsets.append(offset)
                offset += length + JournalRecord.padding(length)
            }
            return offsets
        }

        /// Where the records of a journal file end.
        static func recordsEnd(_ journal: Data) -> Int {
            guard let last = recordOffsets(journal).last else { return Journal.Layout.headerSize }
            let length = Int(journal[last..<last + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
            return last + length + JournalRecord.padding(length)
        }

        /// Edits the journal of the store at `path`.
        static func editJournal(_ path: String, _ edit: (inout Data) throws -> Void) throws {
            let url = URL(fileURLWithPath: path + "-prefs")
            var journal = try Data(contentsOf: url)
            try edit(&journal)
            try journal.write(to: url)
        }

        /// Stores a little-endian integer at `offset`.
        static func put<Integer: FixedWidthInteger>(_ value: Integer, at offset: Int, in journal: inout Data)
        {
            withUnsafeBytes(of: value.littleEndian) {
                journal.replaceSubrange(offset..<offset + MemoryLayout<Integer>.size, with: $0)
            }
        }
    }
#endif
