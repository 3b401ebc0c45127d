// libFuzzer targets for every decoder of bytes from outside, in one binary; the environment
// variable PREFS_FUZZ_TARGET picks one:
//
//   value         the binary value encoding read from SQLite and PostgreSQL rows
//   plist-text    plist text given to `prefs write` (a value, or a whole domain)
//   plist-file    a file given to `prefs import` (XML, binary, JSON, old-style)
//   command-line  `prefs`' whole command line (NUL-separated arguments), on a scratch store
//   store-file    a store file opened from arbitrary bytes
//   journal-file  a store opened beside a journal (`<name>-prefs`) of arbitrary bytes
//   record        one journal record's entries, through the one parser every reader uses
//
// Build: swift build --sanitize=fuzzer --sanitize=address --product PrefsFuzz
// Run:   PREFS_FUZZ_TARGET=value .build/debug/PrefsFuzz Fuzz/Corpus/value
// (See Fuzz/README.md. Without the fuzzer, the binary does nothing.)
import Foundation
import Prefs
import PrefsEngine
import PrefsTool

/// The target chosen by the environment, read once.
private let target = ProcessInfo.processInfo.environment["PREFS_FUZZ_TARGET"] ?? "value"

/// A scratch folder of this process for the targets that touch files (under PREFS_FUZZ_SCRATCH,
/// which `Fuzz/run` points into its work folder, or the temporary folder).
private let scratch: String = {
    let root = ProcessInfo.processInfo.environment["PREFS_FUZZ_SCRATCH"] ?? NSTemporaryDirectory()
    let folder = (root as NSString).appendingPathComponent("prefs-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    // The tool prints; its output is not what is being tested. Nothing reads stdin either.
    let null = open("/dev/null", O_RDWR)
    dup2(null, 1)
    dup2(null, 0)
    close(null)
    return folder
}()

/// libFuzzer's entry point: runs one input through the chosen target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    switch target {
    case "value": fuzzValue(data)
    case "plist-text": fuzzPlistText(data)
    case "plist-file": fuzzPlistFile(data)
    case "command-line": fuzzCommandLine(data)
    case "store-file": fuzzStoreFile(data)
    case "journal-file": fuzzJournalFile(data)
    case "record": fuzzRecord(data)
    default: fatalError("unknown PREFS_FUZZ_TARGET '\(target)'")
    }
    return 0
}

/// Decoding never crashes, and what decodes re-encodes to a value that decodes the same.
private func fuzzValue(_ data: Data) {
    guard let value = try? PropertyListValue(storedEncoding: data) else { return }
    let again = try? PropertyListValue(storedEncoding: value.storedEncoding())
    precondition(again.map { same($0, value) } ?? false, "a decoded value does not survive re-encoding")
}

/// Equality that treats NaN as equal to NaN (a stored NaN is still the same value).
private func same(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
    a.storedEncoding() == b.storedEncoding()
}

private func fuzzPlistText(_ data: Data) {
    let text = String(decoding: data, as: UTF8.self)
    _ = try? PlistText.parse(text)
    _ = try? PlistText.parseDomain(text)
}

private func fuzzPlistFile(_ data: Data) {
    _ = try? PlistText.readFile(data)
}

/// The whole command line, on a scratch SQLite folder.
///
/// Inputs that would reach outside it (another store, a path) or wait forever (`watch`) are
/// skipped.
private func fuzzCommandLine(_ data: Data) {
    let arguments = data.split(separator: 0, omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
    }
    guard arguments.count <= 16,
        !arguments.contains(where: { $0.contains("/") || $0.hasPrefix("--store") || $0 == "watch" })
    else { return }
    _ = runToolReportingErrors(["--store", "sqlite:\(scratch)/cli"] + arguments)
}

/// Opening a store file made of arbitrary bytes throws or opens; an open store reads and writes.
private func fuzzStoreFile(_ data: Data) {
    let path = "\(scratch)/store.sqlite"
    for suffix in ["", "-wal", "-shm", "-journal", "-prefs"] { unlink(path + suffix) }
    guard FileManager.default.createFile(atPath: path, contents: data) else { return }
    guard let store = try? SQLiteStore(path: path) else { return }
    _ = store.snapshot()
    try? store.setValue(.integer(1), forKey: "fuzz")
    _ = store.value(forKey: "fuzz")
}

/// A journal of any bytes is refused with a typed error or opened (its damage cut and
/// reported); either way nothing crashes, and a store that opened still writes and reads back.
private func fuzzJournalFile(_ data: Data) {
    let path = "\(scratch)/journal.sqlite"
    for suffix in ["", "-wal", "-shm", "-journal", "-prefs"] { unlink(path + suffix) }
    guard FileManager.default.createFile(atPath: path + "-prefs", contents: data) else { return }
    // Reports of cut records go to stderr: not what is being tested. A short busy timeout: lock
    // bytes that say "held" by a thread that does not exist make the store wait that long and
    // then throw `.busy` (the typed error this target accepts).
    guard let store = try? SQLiteStore(path: path, options: .init(lockTimeout: .milliseconds(20))) else {
        return
    }
    _ = store.snapshot()
    guard (try? store.setValue(.integer(1), forKey: "fuzz")) != nil else { return }
    precondition(
        store.value(forKey: "fuzz") == .integer(1),
        "a write to a store opened over a damaged journal was lost")
    try? store.flush()
}

/// The bytes of one journal record after its length and checksum (sequence number, entry count,
/// entries) go through the one parser of records (`RecordEntries.read`, which every reader of
/// the journal uses): it hands out entries or names a problem, never reads outside the bytes, and
/// what it accepts the one encoder (`RecordWriter`) writes back byte for byte.
private func fuzzRecord(_ data: Data) {
    guard data.count >= JournalRecord.headerSize - 8 else { return }
    let record = [UInt8](repeating: 0, count: 8) + data
    record.withUnsafeBytes { buffer in
        var entries: [(key: String, value: [UInt8]?)] = []
        let problem = RecordEntries.read(buffer) { key, value in
            entries.append((key, value.map { Array(buffer[$0]) }))
        }
        guard problem == nil else { return }
        let sequence = buffer.loadUnaligned(fromByteOffset: RecordHeader.sequenceOffset, as: UInt64.self)
        var writer = RecordWriter(sequence: UInt64(littleEndian: sequence), count: entries.count)
        for entry in entries {
            if let value = entry.value {
                writer.add(key: entry.key, value: value)
            } else {
                writer.addRemoval(key: entry.key)
            }
        }
        let rebuilt = writer.sealed().bytes
        precondition(
            rebuilt.count >= record.count && rebuilt[8..<record.count].elementsEqual(record[8...]),
            "a record the parser accepted does not encode back to the same bytes")
    }
}
