import PrefsSupport

#if PREFS_POSTGRESQL
    import CLibPQ
    import Foundation
    import Prefs

    /// One libpq connection: connect, run parameterised statements, wait for notifications.
    ///
    /// Not thread-safe by itself: ``PostgresStore`` uses each connection from one place at a time.
    final class PostgresConnection {
        private let handle: OpaquePointer
        private let redact: (String) -> String

        /// A failure reported by libpq or the server, already cleared of the password.
        struct Failure: Error, CustomStringConvertible {
            let message: String
            /// True when the connection itself is gone (the server went away), not just the statement.
            let connectionLost: Bool
            /// True when a parameter was too large to send.
            var tooLarge = false
            /// The server's five-character code for the error (SQLSTATE), when it gave one.
            var sqlState: String?
            var description: String { message }
        }

        /// Connects with `url` exactly as given (TLS settings such as `sslmode` go to libpq untouched).
        init(url: String, redact: @escaping (String) -> String) throws {
            self.redact = redact
            guard let handle = PQconnectdb(url) else {
                throw Failure(message: "libpq could not allocate a connection", connectionLost: true)
            }
            guard PQstatus(handle) == CONNECTION_OK else {
                let message = redact(
                    String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
                PQfinish(handle)
                throw Failure(message: message, connectionLost: true)
            }
            self.handle = handle
            Self.openCount.withLock { $0 += 1 }
        }

        deinit {
            PQfinish(handle)
            Self.openCount.withLock { $0 -= 1 }
        }

        /// How many connections this process holds open to any server (for tests and the
        /// benchmark's connection budget).
        static let openCount = Locked(0)

        var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

        /// The statements prepared on this connection, by their SQL, and the names they have.
        private var preparedNames: [String: String] = [:]

        /// Runs one statement with text and binary parameters; returns the rows, each column's bytes
        /// (`nil` for NULL), in binary result format.
        ///
        /// `prepared` statements are parsed and planned by the server once per connection, then
        /// only executed: the statements of every write and every catch-up are, which halves the
        /// server's work for a write.
        @discardableResult
        func run(_ sql: String, _ parameters: [Parameter] = [], prepared: Bool = false) throws -> [[Data?]] {
            let name = prepared ? try prepare(sql, parameterCount: parameters.count) : nil
            // libpq wants C strings or byte buffers that live through the call.
            let buffers: [Data?] = parameters.map { parameter in
                switch parameter {
                case .text(let text): Data(text.utf8)
                case .bytes(let bytes): bytes
                case .int64(let number): withUnsafeBytes(of: number.bigEndian) { Data($0) }
                case .null: nil
                }
            }
            // libpq takes lengths as `Int32`: refuse larger parameters before converting.
            if let large = buffers.first(where: { ($0?.count ?? 0) > Int(Int32.max) }) {
                throw Failure(
                    message:
                        "a value of \(large?.count ?? 0) bytes is larger than PostgreSQL takes (\(Int32.max) bytes)",
                    connectionLost: false, tooLarge: true)
            }
            let lengths = buffers.map { Int32($0?.count ?? 0) }
            let formats = [Int32](repeating: 1, count: parameters.count)  // binary: bytes as they are
            let pointers = buffers.map { buffer -> UnsafeMutablePointer<CChar>? in
                guard let buffer else { return nil }
                let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(buffer.count, 1))
                buffer.withUnsafeBytes { raw in
                    if let base = raw.baseAddress {
                        pointer.initialize(from: base.assumingMemoryBound(to: CChar.self), count: raw.count)
                    }
                }
                return pointer
            }
            defer { for pointer in pointers { pointer?.deallocate() } }
            let result = pointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
                if let name {
                    return PQexecPrepared(
                        handle, name, Int32(parameters.count), values.baseAddress, lengths, formats, 1)
                }
                return PQexecParams(
                    handle, sql, Int32(parameters.count), nil, values.baseAddress, lengths, formats, 1)
            }
            defer { PQclear(result) }
            try check(result)
            var rows: [[Data?]] = []
            for row in 0..<PQntuples(result) {
                rows.append(
                    (0..<PQnfields(result)).map { column in
                        guard PQgetisnull(result, row, column) == 0 else { return nil }
                        return Data(
                            bytes: PQgetvalue(result, row, column),
                            count: Int(PQgetlength(result, row, column)))
                    })
            }
            return rows
        }

        /// The name of `sql` prepared on this connection, preparing it the first time.
        private func prepare(_ sql: String, parameterCount: Int) throws -> String {
            if let name = preparedNames[sql] { return name }
            let name = "prefs_\(preparedNames.count)"
            let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
            defer { PQclear(result) }
            try check(result)
            preparedNames[sql] = name
            return name
        }

        /// Throws the server's or libpq's message unless `result` is a success.
        private func check(_ result: OpaquePointer?) throws {
            let status = PQresultStatus(result)
            guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
                let detail =
                    result.map { String(cString: PQresultErrorMessage($0)) }
                    ?? String(cString: PQerrorMessage(handle))
                let code = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }
                throw Failure(
                    message: redact(detail.trimmingCharacters(in: .whitespacesAndNewlines)),
                    connectionLost: !isConnected, sqlState: code.map { String(cString: $0) })
            }
        }

        /// Runs `body`, which makes or upgrades tables, in a transaction holding the advisory lock
        /// `advisoryLock`: concurrent `CREATE TABLE IF NOT EXISTS` can still collide, so one
        /// process at a time.
        func preparingSchema(advisoryLock: Int64, _ body: () throws -> Void) throws {
            // "relation already exists, skipping" notices are not worth a line on stderr.
            try run("SET client_min_messages = warning")
            try inTransaction {
                try run("SELECT pg_advisory_xact_lock(\(advisoryLock))")
                try body()
            }
        }

        /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
        func inTransaction<Result>(_ body: () throws -> Result) throws -> Result {
            try run("BEGIN")
            do {
                let result = try body()
                try run("COMMIT")
                return result
            } catch {
                _ = try? run("ROLLBACK")
                throw error
            }
        }

        enum Parameter {
            case text(String)
            case bytes(Data)
            /// A `bigint`, sent in binary format (8 bytes, big-endian).
            case int64(Int64)
            case null
        }

        /// Waits up to `timeout` for notifications and returns their payloads; throws when the
        /// connection is lost.
        ///
        /// `wake`, when given, is a descriptor (a pipe's reading end) that ends the wait early when
        /// it becomes readable; the caller drains it.
        func notifications(waitingUpTo timeout: Duration, wake: Int32 = -1) throws -> [(
            channel: String, payload: String
        )] {
            guard socket >= 0 else {
                throw Failure(message: "the connection to the server is closed", connectionLost: true)
            }
            Self.waitForInput(on: socket, orWake: wake, upTo: timeout)
            return try receivedNotifications(consuming: true)
        }

        /// The connection's socket (negative when it has none).
        var socket: Int32 { PQsocket(handle) }

        /// Waits until `socket` or `wake` has something to read, or `timeout` passed (a negative
        /// descriptor is ignored).
        static func waitForInput(on socket: Int32, orWake wake: Int32, upTo timeout: Duration) {
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, timeout.wholeMilliseconds)
        }

        /// The notifications received and not yet taken; throws when the connection is lost.
        ///
        /// Those that came with statements' results, and, `consuming`, those waiting on the socket.
        func receivedNotifications(consuming: Bool) throws -> [(channel: String, payload: String)] {
            if consuming {
                guard PQconsumeInput(handle) == 1, isConnected else {
                    throw Failure(
                        message: redact(String(cString: PQerrorMessage(handle))), connectionLost: true)
                }
            }
            var received: [(String, String)] = []
            while let notification = PQnotifies(handle) {
                received.append(
                    (
                        String(cString: notification.pointee.relname),
                        String(cString: notification.pointee.extra)
                    ))
                PQfreemem(notification)
            }
            return received
        }
    }
#endif
