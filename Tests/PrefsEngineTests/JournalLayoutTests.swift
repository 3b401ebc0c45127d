import CPrefsShared
import Foundation
import Testing

@testable import PrefsEngine

/// The journal's header layout has one source, the C struct `prefs_journal_header`: the design
/// document's table and the Swift offsets must agree with it.
@Suite struct JournalLayoutTests {
    /// Each field's offset in the C struct, by its C name.
    private static let fields: [String: Int] = [
        "magic": MemoryLayout<prefs_journal_header>.offset(of: \.magic)!,
        "version": MemoryLayout<prefs_journal_header>.offset(of: \.version)!,
        "counter": MemoryLayout<prefs_journal_header>.offset(of: \.counter)!,
        "sleepers": MemoryLayout<prefs_journal_header>.offset(of: \.sleepers)!,
        "writing": MemoryLayout<prefs_journal_header>.offset(of: \.writing)!,
        "lock_kind": MemoryLayout<prefs_journal_header>.offset(of: \.lock_kind)!,
        "sequence": MemoryLayout<prefs_journal_header>.offset(of: \.sequence)!,
        "write_offset": MemoryLayout<prefs_journal_header>.offset(of: \.write_offset)!,
        "base_sequence": MemoryLayout<prefs_journal_header>.offset(of: \.base_sequence)!,
        "generation": MemoryLayout<prefs_journal_header>.offset(of: \.generation)!,
        "file_size": MemoryLayout<prefs_journal_header>.offset(of: \.file_size)!,
        "move_from": MemoryLayout<prefs_journal_header>.offset(of: \.move_from)!,
        "move_length": MemoryLayout<prefs_journal_header>.offset(of: \.move_length)!,
        "move_base": MemoryLayout<prefs_journal_header>.offset(of: \.move_base)!,
        "move_checksum": MemoryLayout<prefs_journal_header>.offset(of: \.move_checksum)!,
        "power_safe_writers": MemoryLayout<prefs_journal_header>.offset(of: \.power_safe_writers)!,
        "database_id": MemoryLayout<prefs_journal_header>.offset(of: \.database_id)!,
        "database_id_copy": MemoryLayout<prefs_journal_header>.offset(of: \.database_id_copy)!,
        "lock": MemoryLayout<prefs_journal_header>.offset(of: \.lock)!,
    ]

    @Test func theDesignDocumentsHeaderTableMatchesTheCStruct() throws {
        let document = EngineTestFiles.repository.appendingPathComponent("docs/sqlite-journal-design.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        // Rows such as "| 32 | `sequence` (u64): the last record's number |".
        var documented: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let offset = Int(cells[0]), cells[1].hasPrefix("`") else { continue }
            let name = cells[1].dropFirst().prefix { $0 != "`" }
            documented[String(name)] = offset
        }
        #expect(documented == Self.fields)
    }

    @Test func swiftReadsEveryOffsetFromTheStruct() {
        typealias Layout = Journal.Layout
        let swift: [String: Int] = [
            "version": Layout.versionOffset, "counter": Layout.counterOffset,
            "sleepers": Layout.sleepersOffset, "writing": Layout.writingOffset,
            "lock_kind": Layout.lockKindOffset, "sequence": Layout.sequenceOffset,
            "write_offset": Layout.writeOffsetOffset, "base_sequence": Layout.baseOffset,
            "generation": Layout.generationOffset, "file_size": Layout.fileSizeOffset,
            "move_from": Layout.moveFromOffset, "move_length": Layout.moveLengthOffset,
            "move_base": Layout.moveBaseOffset, "move_checksum": Layout.moveChecksumOffset,
            "power_safe_writers": Layout.powerSafeWritersOffset, "database_id": Layout.databaseIDOffset,
            "database_id_copy": Layout.databaseIDCopyOffset,
            "lock": Layout.lockOffset,
        ]
        #expect(swift == Self.fields.filter { $0.key != "magic" })
        #expect(Layout.fieldsSize <= Layout.headerSize)
    }

    /// A single write's record is encoded before the journal's lock without a number and
    /// numbered under it: the bytes are those of the record sealed with its number (checksum
    /// included).
    @Test(arguments: [1, 42, UInt64(1) << 40] as [UInt64])
    func aRecordNumberedAfterSealingIsTheRecordSealedWithItsNumber(sequence: UInt64) {
        func writer(_ number: UInt64) -> RecordWriter {
            var writer = RecordWriter(sequence: number, count: 2)
            writer.add(key: "volume", value: [1, 2, 3, 4, 5])
            writer.addRemoval(key: "theme")
            return writer
        }
        var numbered = writer(0).sealedUnnumbered()
        numbered.number(sequence: sequence)
        #expect(numbered.bytes == writer(sequence).sealed().bytes)
        #expect(numbered.bytes != writer(0).sealed().bytes)
        #expect(numbered.count % 8 == 0)
    }

    /// A write reuses the last record's memory: written over a larger record's bytes, a record
    /// is byte for byte the one written fresh (padding zeroed, nothing of the old one left), laid
    /// out as the journal's format says, and the memory is kept as it was.
    @Test func aRecordWrittenOverAnothersMemoryIsTheRecordWrittenFresh() {
        var large = RecordWriter(sequence: 1, count: 1)
        large.add(key: "blob", value: [UInt8](repeating: 0xAB, count: 5_000))
        let memory = large.sealed().memory
        #expect(memory.count >= 5_000 + 32)
        func small(reusing storage: [UInt8]) -> SealedRecord {
            var writer = RecordWriter(sequence: 9, count: 1, reusing: storage)
            writer.add(key: "ab", value: [7, 8, 9])
            return writer.sealed()
        }
        let reused = small(reusing: memory)
        let fresh = small(reusing: [])
        #expect(reused.bytes == fresh.bytes)
        #expect(reused.memory.count == memory.count)
        // Length 33 (20 of header, 13 of entry), then 7 bytes of padding.
        let bytes = fresh.bytes
        #expect(bytes.count == 40)
        #expect(Array(bytes[0..<4]) == [33, 0, 0, 0])
        #expect(Array(bytes[8..<20]) == [9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0])
        #expect(Array(bytes[20...]) == [2, 0, 0, 0, 3, 0, 0, 0, 0x61, 0x62, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0])
    }
}
