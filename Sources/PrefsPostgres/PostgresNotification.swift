import PrefsSupport

#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// What a write tells the namespace's listeners, in one `NOTIFY`.
    ///
    /// Every namespace has a channel of its own, named from a hash of the namespace (hex digits
    /// only, never the namespace spliced into SQL), so an instance wakes only for its own
    /// namespace. The payload carries the write itself when it fits, so listeners apply it without
    /// a query and the server's work per write does not grow with the number of listeners:
    ///
    ///     1 <seq> <namespace, base64> <rows, base64 of their binary value encoding>
    ///
    /// or, when the rows would not fit in `NOTIFY`'s payload (under 8,000 bytes), `-` in place of
    /// the rows: listeners then read the rows after the last sequence number they saw. The
    /// namespace travels too, so that two namespaces whose hashes collide are still told apart.
    /// Rows are applied only over older ones (see `NamespaceCache`), so a late notification or a
    /// reconnect's catch-up can never move a key backwards.
    enum PostgresNotification {
        /// The longest payload sent; `NOTIFY` refuses 8,000 bytes and more.
        static let maximumPayload = 7_900

        /// The channel of `namespace`: `prefs_` and 16 hex digits of a 64-bit FNV-1a hash.
        static func channel(for namespace: String) -> String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in namespace.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            return "prefs_" + String(repeating: "0", count: 16 - hex.count) + hex
        }

        /// The payload announcing `rows`, written at `seq` in `namespace`.
        static func payload(namespace: String, seq: Int64, rows: [StoreKey: PropertyListValue?]) -> String {
            let head = "1 \(seq) \(Data(namespace.utf8).base64EncodedString()) "
            // A row is [key] for a removal and [key, value] for a value.
            let encoded = PropertyListValue.array(
                rows.map { key, value in .array([.string(key.name)] + (value.map { [$0] } ?? [])) })
            let body = encoded.storedEncoding().base64EncodedString()
            return head.utf8.count + body.utf8.count <= maximumPayload ? head + body : head + "-"
        }

        /// What a payload says: its namespace and either its rows or that they must be read.
        enum Contents: Equatable {
            case rows(namespace: String, [EntryRow])
            case readRows(namespace: String)
        }

        /// Parses a payload; `nil` for one this release does not understand (the listener then
        /// catches up, to be safe).
        static func parse(_ payload: String) -> Contents? {
            let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == "1", let seq = Int64(parts[1]),
                let namespaceBytes = Data(base64Encoded: String(parts[2])),
                let namespace = String(validatingUTF8Bytes: namespaceBytes)
            else { return nil }
            guard parts[3] != "-" else { return .readRows(namespace: namespace) }
            guard let bytes = Data(base64Encoded: String(parts[3])),
                case .array(let encodedRows)? = try? PropertyListValue(storedEncoding: bytes)
            else { return nil }
            var rows: [EntryRow] = []
            for encoded in encodedRows {
                guard case .array(let fields) = encoded, let first = fields.first,
                    case .string(let key) = first,
                    fields.count <= 2
                else { return nil }
                rows.append(
                    EntryRow(key: StoreKey(key), value: fields.count == 2 ? fields[1] : nil, seq: seq))
            }
            return .rows(namespace: namespace, rows)
        }
    }
#endif
