import Dispatch
import Foundation
import PrefsModel

/// Builds a store's cache from its rows on a second thread while the opening thread reads them
/// from SQLite, so opening a large store takes about the longer of the two instead of their sum.
///
/// The opening thread copies each row's key and value bytes into a chunk (SQLite's own buffers
/// are valid only until its next step) and hands every full chunk to a serial queue, which turns
/// the keys into strings, checks the values' stored encoding, and fills the table. Only that
/// queue touches the table until ``finish()``, which waits for it: the table is handed over, not
/// shared.
///
/// ```swift
/// let fill = ParallelTableFill(KeyTable(minimumCapacity: 1))
/// let key = Array("volume".utf8), value = PropertyListValue.double(0.5).storedEncoding()
/// key.withUnsafeBytes { key in value.withUnsafeBytes { value in fill.add(key: key, value: value) } }
/// let (table, undecodable) = fill.finish()
/// ```
final class ParallelTableFill: @unchecked Sendable {
    // `@unchecked`: `table` and `undecodable` are touched only on `queue` until `finish()` has
    // waited for it; `chunk` and `rowsInChunk` only by the opening thread.
    private var table: KeyTable
    private var undecodable: [String] = []
    private let queue = DispatchQueue(label: "prefs.sqlite.open")
    private var chunk: [UInt8] = []
    private var rowsInChunk = 0

    /// Rows per chunk: large enough that handing a chunk over costs nothing next to filling it,
    /// small enough that the two threads overlap from the start.
    private static let rowsPerChunk = 2048

    init(_ table: KeyTable) {
        self.table = table
    }

    /// Adds one row (its key's UTF-8 and its value's stored encoding), copying both.
    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        Self.append(UInt32(key.count), to: &chunk)
        Self.append(UInt32(value.count), to: &chunk)
        chunk.append(contentsOf: key)
        chunk.append(contentsOf: value)
        rowsInChunk += 1
        if rowsInChunk == Self.rowsPerChunk { handOver() }
    }

    /// Waits for every row to be in the table and returns it, with the keys whose values are not
    /// a stored encoding this release can read (left out of the table).
    func finish() -> (table: KeyTable, undecodable: [String]) {
        handOver()
        return queue.sync {
            // Moved out, so the caller's table is the only reference to its storage.
            defer { table = KeyTable() }
            return (table, undecodable)
        }
    }

    private func handOver() {
        guard rowsInChunk > 0 else { return }
        let rows = chunk
        chunk = []
        chunk.reserveCapacity(rows.count)
        rowsInChunk = 0
        queue.async { self.fill(from: rows) }
    }

    /// On `queue`: every row of a chunk into the table.
    private func fill(from rows: [UInt8]) {
        rows.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                // Counts this process wrote from SQLite's lengths (an Int32 each).
                let keyCount = Int(
                    truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                let valueCount = Int(
                    truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                let key = UnsafeRawBufferPointer(rebasing: bytes[(offset + 8)..<(offset + 8 + keyCount)])
                let valueStart = offset + 8 + keyCount
                let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<(valueStart + valueCount)])
                offset = valueStart + valueCount
                let name = String(decoding: key, as: UTF8.self)
                // Checked now, decoded when first read: a large store opens without building its values.
                if PropertyListValue.isStoredEncoding(value) {
                    table.insert(encoded: value, for: StoreKey(name))
                } else {
                    undecodable.append(name)
                }
            }
        }
    }

    private static func append(_ number: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: number) { bytes.append(contentsOf: $0) }
    }
}
