import Foundation
import PrefsSupport

/// The stored encoding: the compact form in which the database stores (SQLite, PostgreSQL) keep a
/// value — Prefs's own, not Apple's binary property list. Exact for every value (dates and reals
/// bit for bit, strings with any character), and checked on the way back so a damaged blob is an
/// error, never a crash.
///
/// Layout: one tag byte, then the payload. Integers, reals and dates are 8 bytes little-endian;
/// strings and data are a length (LEB128) and the bytes; arrays are a count and the elements;
/// dictionaries are a count and, sorted by key, each key (as a string payload) and its value.
extension PropertyListValue {
    fileprivate enum Tag: UInt8 {
        case boolFalse = 0x01
        case boolTrue, integer, double, string, date, data, array, dictionary
        /// An integer above `Int64.max` (added after the first release: older releases report a
        /// value with it as one they cannot decode, and ignore it).
        case unsignedInteger
    }

    /// The value's stored encoding.
    ///
    /// ```swift
    /// let bytes = PropertyListValue.integer(1).storedEncoding()
    /// try PropertyListValue(storedEncoding: bytes)  // .integer(1)
    /// ```
    package func storedEncoding() -> Data {
        let count = storedEncodingCount
        var data = Data(count: count)
        let written = data.withUnsafeMutableBytes { writeStoredEncoding(to: $0.baseAddress!) }
        precondition(written == count, "a value wrote \(written) bytes, not the \(count) it counted")
        return data
    }

    /// How many bytes the value's stored encoding takes (what
    /// ``writeStoredEncoding(to:)`` writes); `Int.max` when that is more than an `Int` holds
    /// (on a 32-bit `Int`, an array of copies of one large `Data`), which every caller refuses.
    package var storedEncodingCount: Int {
        switch self {
        case .bool: 1
        case .integer, .unsignedInteger, .double, .date: 9
        case .string(let text): (1 + Self.lengthCount(text.utf8.count)).addingSaturated(text.utf8.count)
        case .data(let data): (1 + Self.lengthCount(data.count)).addingSaturated(data.count)
        case .array(let elements):
            elements.reduce(1 + Self.lengthCount(elements.count)) {
                $0.addingSaturated($1.storedEncodingCount)
            }
        case .dictionary(let entries):
            entries.reduce(1 + Self.lengthCount(entries.count)) { total, entry in
                let key = entry.key.utf8.count
                return total.addingSaturated(Self.lengthCount(key) + key).addingSaturated(
                    entry.value.storedEncodingCount)
            }
        }
    }

    /// Writes the value's stored encoding from `start` (``storedEncodingCount`` bytes, which
    /// it returns): the one encoder of values, for a record of the journal as for a row.
    package func writeStoredEncoding(to start: UnsafeMutableRawPointer) -> Int {
        var writer = StoredEncodingWriter(next: start)
        writer.write(self)
        return writer.next - start
    }

    /// Decodes a value from its stored encoding, throwing ``StoredEncodingError`` when the bytes are
    /// not a complete, well-formed value.
    ///
    /// ```swift
    /// let blob = PropertyListValue.double(0.5).storedEncoding()
    /// let value = try PropertyListValue(storedEncoding: blob)  // .double(0.5)
    /// ```
    package init(storedEncoding bytes: Data) throws {
        self = try bytes.withUnsafeBytes { try Self(storedEncodingBytes: $0) }
    }

    /// The same from bytes in memory (a SQLite row, a journal record), without copying them.
    package init(storedEncodingBytes bytes: UnsafeRawBufferPointer) throws {
        var reader = StoredEncodingReader(bytes: bytes)
        self = try reader.readValue(depth: 0)
        guard reader.isAtEnd else { throw StoredEncodingError(reason: "trailing bytes after the value") }
    }

    /// Whether `bytes` are a complete, well-formed value: the checks of decoding, without
    /// building the value (a large store checks every row when it opens and decodes a value the
    /// first time it is read).
    package static func isStoredEncoding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = StoredEncodingReader(bytes: bytes, checksOnly: true)
        guard (try? reader.readValue(depth: 0)) != nil else { return false }
        return reader.isAtEnd
    }

    /// The bytes of a LEB128 length.
    fileprivate static func lengthCount(_ length: Int) -> Int {
        var count = 1
        var rest = UInt64(length) >> 7
        while rest != 0 {
            count += 1
            rest >>= 7
        }
        return count
    }

    /// Writes through a pointer into memory sized by ``storedEncodingCount`` (no bounds to
    /// check: the two walk the value alike).
    fileprivate struct StoredEncodingWriter {
        var next: UnsafeMutableRawPointer

        mutating func write(_ value: PropertyListValue) {
            switch value {
            case .bool(let flag): writeByte((flag ? Tag.boolTrue : Tag.boolFalse).rawValue)
            case .integer(let number): writeTagged(.integer, UInt64(bitPattern: number))
            case .unsignedInteger(let number): writeTagged(.unsignedInteger, number)
            case .double(let real): writeTagged(.double, real.bitPattern)
            case .date(let date): writeTagged(.date, date.timeIntervalSinceReferenceDate.bitPattern)
            case .string(let text):
                writeByte(Tag.string.rawValue)
                writeString(text)
            case .data(let data):
                writeByte(Tag.data.rawValue)
                writeLength(data.count)
                data.withUnsafeBytes { writeBytes($0) }
            case .array(let elements):
                writeByte(Tag.array.rawValue)
                writeLength(elements.count)
                for element in elements { write(element) }
            case .dictionary(let entries):
                writeByte(Tag.dictionary.rawValue)
                writeLength(entries.count)
                // Sorted, so equal dictionaries have equal bytes.
                for key in entries.keys.sorted() {
                    writeString(key)
                    write(entries[key]!)
                }
            }
        }

        mutating func writeByte(_ byte: UInt8) {
            next.storeBytes(of: byte, as: UInt8.self)
            next += 1
        }

        mutating func writeTagged(_ tag: Tag, _ bits: UInt64) {
            writeByte(tag.rawValue)
            next.storeBytes(of: bits.littleEndian, as: UInt64.self)
            next += 8
        }

        mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
            if let base = bytes.baseAddress { next.copyMemory(from: base, byteCount: bytes.count) }
            next += bytes.count
        }

        mutating func writeString(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                writeLength(utf8.count)
                writeBytes(UnsafeRawBufferPointer(utf8))
            }
        }

        mutating func writeLength(_ length: Int) {
            var rest = UInt64(length)
            repeat {
                let low = UInt8(rest & 0x7F)
                rest >>= 7
                writeByte(rest == 0 ? low : low | 0x80)
            } while rest != 0
        }
    }

    fileprivate struct StoredEncodingReader {
        let bytes: UnsafeRawBufferPointer
        /// Check every byte as decoding does, but build nothing (each value read is a placeholder).
        var checksOnly = false
        var offset = 0
        var isAtEnd: Bool { offset == bytes.count }

        /// Reads one value with `depth` containers around it.
        ///
        /// The nesting limit is the one writes are checked against, so whatever was written is
        /// read back; it also bounds the recursion on hostile input.
        mutating func readValue(depth: Int) throws -> PropertyListValue {
            let tagByte = try readByte()
            guard let tag = Tag(rawValue: tagByte) else {
                throw StoredEncodingError(reason: "unknown tag \(tagByte)")
            }
            if tag == .array || tag == .dictionary, depth >= PropertyListValue.maximumNestingDepth {
                throw StoredEncodingError(
                    reason: "nested deeper than \(PropertyListValue.maximumNestingDepth) containers")
            }
            switch tag {
            case .boolFalse: return .bool(false)
            case .boolTrue: return .bool(true)
            case .integer: return .integer(Int64(bitPattern: try readWord()))
            // Read in its one canonical form, whichever tag wrote it.
            case .unsignedInteger: return .integer(unsigned: try readWord())
            case .double: return .double(Double(bitPattern: try readWord()))
            case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readWord())))
            case .string: return .string(try readString())
            case .data:
                let bytes = try readBytes(try readLength())
                return checksOnly ? .bool(false) : .data(Data(bytes))
            case .array:
                let count = try readLength()
                if checksOnly {
                    for _ in 0..<count { _ = try readValue(depth: depth + 1) }
                    return .bool(false)
                }
                var elements: [PropertyListValue] = []
                elements.reserveCapacity(min(count, bytes.count - offset))
                for _ in 0..<count { elements.append(try readValue(depth: depth + 1)) }
                return .array(elements)
            case .dictionary:
                let count = try readLength()
                if checksOnly {
                    for _ in 0..<count {
                        _ = try readString()
                        _ = try readValue(depth: depth + 1)
                    }
                    return .bool(false)
                }
                var entries: [String: PropertyListValue] = [:]
                for _ in 0..<count {
                    let key = try readString()
                    entries[key] = try readValue(depth: depth + 1)
                }
                return .dictionary(entries)
            }
        }

        mutating func readByte() throws -> UInt8 {
            guard offset < bytes.count else { throw StoredEncodingError(reason: "truncated value") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func readWord() throws -> UInt64 {
            guard 8 <= bytes.count - offset else { throw StoredEncodingError(reason: "truncated value") }
            defer { offset += 8 }
            return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }

        mutating func readBytes(_ count: Int) throws -> UnsafeRawBufferPointer {
            guard count <= bytes.count - offset else { throw StoredEncodingError(reason: "truncated value") }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }

        mutating func readLength() throws -> Int {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = try readByte()
                guard shift < 63 else { throw StoredEncodingError(reason: "length too long") }
                result |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            guard result <= UInt64(bytes.count - offset) else {
                throw StoredEncodingError(reason: "truncated value")
            }
            return Int(truncatingIfNeeded: result)  // at most `bytes.count`, checked above
        }

        mutating func readString() throws -> String {
            let raw = try readBytes(try readLength())
            // ASCII (most of what is stored) is UTF-8 as it is.
            if checksOnly && raw.allSatisfy({ $0 < 0x80 }) { return "" }
            guard let text = String(validatingUTF8Bytes: raw) else {
                throw StoredEncodingError(reason: "a string that is not UTF-8")
            }
            return text
        }
    }
}

/// Bytes that are not the stored encoding of a value.
///
/// ```swift
/// do { _ = try PropertyListValue(storedEncoding: Data([0xFF])) } catch { print(error) }
/// // not a stored value: unknown tag 255
/// ```
package struct StoredEncodingError: Error, CustomStringConvertible, LocalizedError {
    /// What is wrong with the bytes.
    package let reason: String

    /// `not a stored value: REASON`.
    package var description: String { "not a stored value: \(reason)" }

    /// The same explanation, for `localizedDescription`.
    package var errorDescription: String? { description }
}
