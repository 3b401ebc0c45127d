#if PREFS_POSTGRESQL
    import CLibPQ
    import Foundation

    /// What a connection string may say in public: its settings without the secrets, and the
    /// secrets themselves, to be cut out of every message.
    ///
    /// libpq's own parser (`PQconninfoParse`) reads the string, so every form libpq accepts is
    /// covered the same way: URLs (a password in the user part or in `?password=`, with any
    /// characters, `#` included) and `key=value` strings, and every option libpq marks as secret
    /// (`password`, `sslpassword`).
    struct ConnectionSecrets: Sendable {
        /// The connection settings without secrets, as `postgresql://user@host:port/dbname` or
        /// `host=… dbname=…`.
        let safeDescription: String
        private let secrets: [String]

        /// Parses `conninfo`; throws libpq's message when it is not a connection string or URL.
        init(_ conninfo: String) throws {
            var error: UnsafeMutablePointer<CChar>?
            guard let options = PQconninfoParse(conninfo, &error) else {
                let libpqMessage = error.map { String(cString: $0) } ?? "not a connection string or URL"
                if let error { PQfreemem(error) }
                // libpq's message quotes the token it could not read, which may be the password
                // itself (a bad percent-encoding in it): cut out every secret as written.
                let message = Self.redactUnparsed(libpqMessage, of: conninfo)
                throw PostgresConnection.Failure(
                    message: "not a PostgreSQL connection string or URL: "
                        + message.trimmingCharacters(in: .whitespacesAndNewlines),
                    connectionLost: false)
            }
            defer { PQconninfoFree(options) }
            var settings: [(String, String)] = []
            var secrets: [String] = []
            var option = options
            while let keyword = option.pointee.keyword {
                if let value = option.pointee.val {
                    let text = String(cString: value)
                    // libpq marks the options it never shows (passwords) with the display character "*".
                    if let display = option.pointee.dispchar, String(cString: display) == "*" {
                        if !text.isEmpty { secrets.append(text) }
                    } else {
                        settings.append((String(cString: keyword), text))
                    }
                }
                option += 1
            }
            // A secret can also appear in the string percent-encoded (in a URL) or quoted.
            var forms = Set<String>()
            for secret in secrets {
                forms.insert(secret)
                for allowed in [CharacterSet.urlPasswordAllowed, .urlQueryAllowed, .alphanumerics] {
                    if let encoded = secret.addingPercentEncoding(withAllowedCharacters: allowed) {
                        forms.insert(encoded)
                    }
                }
                forms.insert(
                    secret.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                        of: "'", with: "\\'")
                )
            }
            forms.formUnion(Self.rawURLSecrets(conninfo))
            self.secrets = forms.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
            safeDescription = Self.describe(settings, isURL: Self.isURL(conninfo))
        }

        /// libpq's message about a string it could not parse, with every secret the string holds
        /// as written (a URL's password, `password=` and `sslpassword=` values, quoted or not)
        /// replaced by `***`, and any quoted token of the message that overlaps one of them too.
        static func redactUnparsed(_ message: String, of conninfo: String) -> String {
            let secrets = (rawURLSecrets(conninfo) + rawKeywordSecrets(conninfo)).filter { !$0.isEmpty }
            var redacted = secrets.sorted { $0.count > $1.count }.reduce(message) {
                $0.replacingOccurrences(of: $1, with: "***")
            }
            // A token libpq quotes ("…") that is part of a secret, or holds one.
            let pieces = redacted.split(separator: "\"", omittingEmptySubsequences: false)
            if pieces.count >= 3 {
                redacted = pieces.enumerated().map { index, piece in
                    index % 2 == 1 && secrets.contains { $0.contains(piece) || piece.contains($0) }
                        ? "***" : String(piece)
                }.joined(separator: "\"")
            }
            return redacted
        }

        /// The values of `password=` and `sslpassword=` in a `key=value` string, as written
        /// (quoted or not), read without libpq (which refused the string).
        private static func rawKeywordSecrets(_ conninfo: String) -> [String] {
            guard !isURL(conninfo) else { return [] }
            var found: [String] = []
            for keyword in ["password", "sslpassword"] {
                var searchFrom = conninfo.startIndex
                while let match = conninfo.range(of: keyword, range: searchFrom..<conninfo.endIndex) {
                    searchFrom = match.upperBound
                    let startsWord =
                        match.lowerBound == conninfo.startIndex
                        || conninfo[conninfo.index(before: match.lowerBound)].isWhitespace
                    var rest = conninfo[match.upperBound...].drop { $0 == " " }
                    guard startsWord, rest.first == "=" else { continue }
                    rest = rest.dropFirst().drop { $0 == " " }
                    if rest.first == "'" {
                        // Up to the closing quote (or the end, when it is missing), escapes kept.
                        var value = ""
                        var escaped = false
                        for character in rest.dropFirst() {
                            if character == "'" && !escaped { break }
                            escaped = character == "\\" && !escaped
                            value.append(character)
                        }
                        found.append(value)
                    } else {
                        found.append(String(rest.prefix { !$0.isWhitespace }))
                    }
                }
            }
            return found
        }

        /// `text` with every secret replaced by `***`.
        func redact(_ text: String) -> String {
            secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "***") }
        }

        private static func isURL(_ conninfo: String) -> Bool {
            conninfo.hasPrefix("postgresql://") || conninfo.hasPrefix("postgres://")
        }

        /// The password as written in a URL's user part (libpq ends the user part at the first `@`
        /// before any `/`), and `password=`/`sslpassword=` query values as written.
        private static func rawURLSecrets(_ conninfo: String) -> [String] {
            guard isURL(conninfo), let schemeEnd = conninfo.range(of: "://") else { return [] }
            var found: [String] = []
            let rest = conninfo[schemeEnd.upperBound...]
            if let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@",
                let colon = rest[..<end].firstIndex(of: ":")
            {
                found.append(String(rest[rest.index(after: colon)..<end]))
            }
            if let query = rest.firstIndex(of: "?") {
                for item in rest[rest.index(after: query)...].split(separator: "&") {
                    let parts = item.split(separator: "=", maxSplits: 1)
                    if parts.count == 2, parts[0] == "password" || parts[0] == "sslpassword" {
                        found.append(String(parts[1]))
                    }
                }
            }
            return found
        }

        private static func describe(_ settings: [(String, String)], isURL: Bool) -> String {
            let values = Dictionary(settings, uniquingKeysWith: { _, last in last })
            if isURL {
                var text = "postgresql://"
                if let user = values["user"] { text += "\(user)@" }
                text += values["host"].map { $0.hasPrefix("/") ? "" : $0 } ?? ""
                if let port = values["port"] { text += ":\(port)" }
                text += "/\(values["dbname"] ?? "")"
                let others = settings.filter {
                    !["user", "port", "dbname"].contains($0.0) && !($0.0 == "host" && !$0.1.hasPrefix("/"))
                }
                if !others.isEmpty { text += "?" + others.map { "\($0.0)=\($0.1)" }.joined(separator: "&") }
                return text
            }
            return settings.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        }
    }
#endif
