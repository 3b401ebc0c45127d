import Foundation
import PrefsJournal

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
    public func storedEncoding() -> Data {
        var writer = StoredEncodingWriter()
        writer.write(self)
        return Data(writer.bytes)
    }

    /// Appends the value's stored encoding to `bytes` (the SQLite journal writes records this way,
    /// without a buffer per value).
    package func appendStoredEncoding(to bytes: inout [UInt8]) {
        var writer = StoredEncodingWriter(bytes: bytes)
        bytes = []  // so the writer's array is not shared, and appends in place
        writer.write(self)
        bytes = writer.bytes
    }

    /// Decodes a value from its stored encoding, throwing ``StoredEncodingError`` when the bytes are
    /// not a complete, well-formed value.
    ///
    /// ```swift
    /// let blob = PropertyListValue.double(0.5).storedEncoding()
    /// let value = try PropertyListValue(storedEncoding: blob)  // .double(0.5)
    /// ```
    public init(storedEncoding bytes: Data) throws {
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

    fileprivate struct StoredEncodingWriter {
        var bytes: [UInt8] = []

        mutating func write(_ value: PropertyListValue) {
            switch value {
            case .bool(let flag): bytes.append((flag ? Tag.boolTrue : Tag.boolFalse).rawValue)
            case .integer(let number): writeTagged(.integer, UInt64(bitPattern: number))
            case .unsignedInteger(let number): writeTagged(.unsignedInteger, number)
            case .double(let real): writeTagged(.double, real.bitPattern)
            case .date(let date): writeTagged(.date, date.timeIntervalSinceReferenceDate.bitPattern)
            case .string(let text):
                bytes.append(Tag.string.rawValue)
                writeString(text)
            case .data(let data):
                bytes.append(Tag.data.rawValue)
                writeLength(data.count)
                bytes.append(contentsOf: data)
            case .array(let elements):
                bytes.append(Tag.array.rawValue)
                writeLength(elements.count)
                for element in elements { write(element) }
            case .dictionary(let entries):
                bytes.append(Tag.dictionary.rawValue)
                writeLength(entries.count)
                // Sorted, so equal dictionaries have equal bytes.
                for key in entries.keys.sorted() {
                    writeString(key)
                    write(entries[key]!)
                }
            }
        }

        mutating func writeTagged(_ tag: Tag, _ bits: UInt64) {
            bytes.append(tag.rawValue)
            withUnsafeBytes(of: bits.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func writeString(_ text: String) {
            writeLength(text.utf8.count)
            bytes.append(contentsOf: text.utf8)
        }

        mutating func writeLength(_ length: Int) {
            var rest = UInt64(length)
            repeat {
                let low = UInt8(rest & 0x7F)
                rest >>= 7
                bytes.append(rest == 0 ? low : low | 0x80)
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
            return Int(result)
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
public struct StoredEncodingError: Error, CustomStringConvertible, LocalizedError {
    /// What is wrong with the bytes.
    public let reason: String

    /// `not a stored value: REASON`.
    public var description: String { "not a stored value: \(reason)" }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
