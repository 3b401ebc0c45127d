import PrefsSupport

#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// What a push tells the listening replicas in its notification, so that they need not ask
    /// the server for it: the namespace, the row number the namespace stood at before the push
    /// (`previous`), the last number the push wrote, and the entries it wrote.
    ///
    /// A replica's pull after `previous` is then answered by the entries alone. Pushes to one
    /// namespace are serialized by its advisory lock, so pushes heard whose `previous` and `last`
    /// link up from a pull's cursor cover every row written after it: nothing between them
    /// can be missing. Each field is written as its length in bytes, a colon and its bytes, so
    /// any key or replica name travels as it is; a push too large for a notification (8,000
    /// bytes) is told without its entries (`*` in their place), and listeners ask the server.
    ///
    /// ```swift
    /// let entries = [SyncEntry(key: "theme", value: .string("dark"), stamp: stamp)]
    /// let payload = SyncPush(namespace: "team", previous: 41, last: 42, entries: entries).payload
    /// let heard = SyncPush(payload: payload)
    /// ```
    struct SyncPush: Equatable {
        let namespace: String
        let previous: Int64
        let last: Int64
        /// What the push wrote; `nil` when it was too large to tell.
        let entries: [SyncEntry]?

        /// Notifications are refused past 8,000 bytes; this leaves room for the channel's name.
        static let maximumPayloadBytes = 7_900

        /// The notification's text: without the entries when they do not fit.
        var payload: String {
            let head = [namespace, "\(previous)", "\(last)"]
            var fields = head
            for entry in entries ?? [] {
                fields += [
                    entry.key, entry.value.map { Self.hex($0.storedEncoding()) } ?? "-",
                    "\(entry.stamp.wallMilliseconds)", "\(entry.stamp.counter)", entry.stamp.replica,
                ]
            }
            if entries == nil { fields.append("*") }
            let text = Self.joined(fields)
            return text.utf8.count <= Self.maximumPayloadBytes ? text : Self.joined(head + ["*"])
        }

        private static func joined(_ fields: [String]) -> String {
            fields.map { "\($0.utf8.count):\($0)" }.joined()
        }

        init(namespace: String, previous: Int64, last: Int64, entries: [SyncEntry]?) {
            self.namespace = namespace
            self.previous = previous
            self.last = last
            self.entries = entries
        }

        /// The push a notification's text describes; `nil` for text that is not one (a
        /// namespace alone, another release's, damaged).
        init?(payload: String) {
            var bytes = Substring(payload).utf8[...]
            var fields: [String] = []
            while !bytes.isEmpty {
                guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
                    let count = Int(String(decoding: bytes[..<colon], as: UTF8.self)), count >= 0
                else { return nil }
                let start = bytes.index(after: colon)
                guard let end = bytes.index(start, offsetBy: count, limitedBy: bytes.endIndex) else {
                    return nil
                }
                fields.append(String(decoding: bytes[start..<end], as: UTF8.self))
                bytes = bytes[end...]
            }
            // A push writes at least one row: its last number is above the one before it.
            guard fields.count >= 3, let previous = Int64(fields[1]), let last = Int64(fields[2]),
                previous < last
            else { return nil }
            if fields.count == 4, fields[3] == "*" {
                self.init(namespace: fields[0], previous: previous, last: last, entries: nil)
                return
            }
            guard (fields.count - 3) % 5 == 0 else { return nil }
            var entries: [SyncEntry] = []
            for start in stride(from: 3, to: fields.count, by: 5) {
                let part = fields[start..<start + 5].map { $0 }
                guard let wall = UInt64(part[2]), let counter = UInt32(part[3]) else { return nil }
                var value: PropertyListValue?
                if part[1] != "-" {
                    guard let bytes = Self.bytes(hex: part[1]),
                        let decoded = try? PropertyListValue(storedEncoding: bytes)
                    else { return nil }
                    value = decoded
                }
                entries.append(
                    SyncEntry(
                        key: part[0], value: value,
                        stamp: SyncStamp(wallMilliseconds: wall, counter: counter, replica: part[4])))
            }
            self.init(namespace: fields[0], previous: previous, last: last, entries: entries)
        }

        /// Lowercase hexadecimal digits of `data` (a notification's values, and a push's, as
        /// PostgreSQL's `decode(…, 'hex')` reads them).
        static func hex(_ data: Data) -> String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = []
            text.reserveCapacity(data.count * 2)
            for byte in data {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0xF)])
            }
            return String(decoding: text, as: UTF8.self)
        }

        private static func bytes(hex text: String) -> Data? {
            let digits = Array(text.utf8)
            guard digits.count % 2 == 0 else { return nil }
            func nibble(_ digit: UInt8) -> UInt8? {
                switch digit {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
                default: nil
                }
            }
            var data = Data(capacity: digits.count / 2)
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
                    return nil
                }
                data.append(high << 4 | low)
            }
            return data
        }
    }

    /// The pushes a remote's listener heard, kept until a pull uses them.
    ///
    /// ```swift
    /// let push = SyncPush(namespace: "team", previous: 41, last: 42, entries: [])
    /// var heard = HeardPushes()
    /// heard.add(push)
    /// let answer = heard.entries(after: 41)  // the pushes from 41 on, if they link up
    /// ```
    struct HeardPushes {
        /// By the row number each push started after.
        private var byPrevious: [Int64: SyncPush] = [:]
        /// The highest row number heard of.
        private var newest: Int64 = 0

        /// Pushes kept at most (a replica that stops pulling does not grow this without bound).
        static let kept = 1_000

        mutating func add(_ push: SyncPush) {
            guard push.entries != nil else { return forget() }  // untold: the server is asked
            if byPrevious.count >= Self.kept { byPrevious.removeAll() }
            byPrevious[push.previous] = push
            newest = max(newest, push.last)
        }

        /// Forgets everything (the listener reconnected: what was sent meanwhile was not heard).
        mutating func forget() {
            byPrevious.removeAll()
            newest = 0
        }

        /// The entries written after `cursor` and the cursor after them, when the pushes heard
        /// link up from `cursor` to the newest heard of; `nil` otherwise (the server is asked).
        mutating func entries(after cursor: Int64) -> (entries: [SyncEntry], cursor: Int64)? {
            guard newest > 0, newest >= cursor else { return nil }
            var at = cursor
            var entries: [SyncEntry] = []
            while at < newest, let push = byPrevious[at], push.last > at, let written = push.entries {
                entries += written
                at = push.last
            }
            guard at == newest else { return nil }
            byPrevious = byPrevious.filter { $0.key >= at }
            return (entries, at)
        }
    }
#endif
