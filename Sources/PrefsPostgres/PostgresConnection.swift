import PrefsSupport

#if PREFS_POSTGRESQL
    import CLibPQ
    import Foundation
    import Prefs

    /// One libpq connection: connect, run parameterised statements, wait for notifications.
    ///
    /// Not thread-safe by itself: ``PostgresStore`` uses each connection from one place at a time.
    ///
    /// Every call has a deadline (``callBound``): libpq is used without blocking (the request is
    /// sent and its answer awaited with `poll()`), and a call the server has not answered by then
    /// ends the connection (its socket is shut down, so nothing of it waits any longer) and throws
    /// a failure with `connectionLost` and `timedOut`. A silently dead connection (a host that lost
    /// power, a network that drops or holds packets) is so noticed within the bound instead of
    /// holding its caller, and whatever lock the caller holds, until TCP gives up hours later.
    final class PostgresConnection {
        private let handle: OpaquePointer
        private let redact: (String) -> String
        /// Set when a call passed its deadline: the connection is ended for good.
        private var abandoned = false

        /// The statement a listening connection sends after a quiet while, to learn whether its peer
        /// still answers (TCP keepalive misses a peer that holds every packet); named, so
        /// `pg_stat_activity` tells it from a pull.
        static let livenessProbe = "SELECT 1 /* prefs: is this listening connection alive */"

        /// How long any call waits for the server: connecting, a statement, a notification's
        /// delivery are all answered within this or fail.
        static let callBound: Duration = .seconds(10)

        /// How long a listening connection may stay silent before a statement checks it: a
        /// connection whose peer holds every packet (a stalled network, a proxy) looks alive to
        /// TCP, keepalives included.
        static let quietBeforeCheck: Duration = .seconds(10)

        /// Bounds the server keeps on Prefs' own sessions.
        ///
        /// Each is set at connect unless the operator set it for the role or database (or in
        /// the connection's `options`):
        ///
        /// - `idle_in_transaction_session_timeout`: a session whose client went silent inside a
        ///   transaction is ended, and its locks freed, after 5 s;
        /// - `lock_timeout`: no statement waits longer than 7 s for a lock (longer than the
        ///   bound above: a write waiting behind a silent session outlasts it, and goes through);
        /// - `statement_timeout`: no statement runs longer than 8 s (below ``callBound``, so the
        ///   server's own error comes first).
        static let sessionBounds = [
            ("idle_in_transaction_session_timeout", "5s"), ("lock_timeout", "7s"),
            ("statement_timeout", "8s"),
        ]

        /// TCP settings given to libpq unless the connection string gives its own.
        ///
        /// Keepalives
        /// after 5 s of silence, every 2 s, 3 unanswered end the connection (about 11 s); data
        /// unacknowledged for 10 s ends it too (`tcp_user_timeout`). libpq ignores them on Unix
        /// sockets.
        static let tcpSettings = [
            ("keepalives", "1"), ("keepalives_idle", "5"), ("keepalives_interval", "2"),
            ("keepalives_count", "3"), ("tcp_user_timeout", "10000"),
        ]

        /// A failure reported by libpq or the server, already cleared of the password.
        struct Failure: Error, CustomStringConvertible {
            let message: String
            /// True when the connection itself is gone (the server went away), not just the statement.
            let connectionLost: Bool
            /// True when a parameter was too large to send.
            var tooLarge = false
            /// The server's five-character code for the error (SQLSTATE), when it gave one.
            var sqlState: String?
            /// True when the server did not answer within ``PostgresConnection/callBound``.
            var timedOut = false
            var description: String { message }
        }

        /// Connects with `url` exactly as given (TLS settings such as `sslmode` go to libpq
        /// untouched), within ``callBound``, and sets ``sessionBounds``.
        init(url: String, redact: @escaping (String) -> String) throws {
            self.redact = redact
            // Ours first, the caller's string last: libpq keeps the last value given for a
            // keyword, so the connection string's own settings win.
            let settings = Self.tcpSettings + [("dbname", url)]
            let keywords = settings.map { strdup($0.0) }
            let values = settings.map { strdup($0.1) }
            defer { for pointer in keywords + values { free(pointer) } }
            let handle = (keywords + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { keys in
                (values + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
                    PQconnectStartParams(keys.baseAddress, values.baseAddress, 1)
                }
            }
            guard let handle else {
                throw Failure(message: "libpq could not allocate a connection", connectionLost: true)
            }
            func fail(_ message: String, timedOut: Bool = false) -> Failure {
                let text = redact(message.trimmingCharacters(in: .whitespacesAndNewlines))
                PQfinish(handle)
                return Failure(message: text, connectionLost: true, timedOut: timedOut)
            }
            let deadline = ContinuousClock.now + Self.callBound
            var status = PQstatus(handle) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING
            while status != PGRES_POLLING_OK {
                guard status != PGRES_POLLING_FAILED else {
                    throw fail(String(cString: PQerrorMessage(handle)))
                }
                let events = status == PGRES_POLLING_READING ? POLLIN : POLLOUT
                guard Self.wait(for: Int16(events), on: PQsocket(handle), until: deadline) else {
                    throw fail(
                        "the server did not answer within \(Self.callBound.components.seconds) s while connecting",
                        timedOut: true)
                }
                status = PQconnectPoll(handle)
            }
            guard PQstatus(handle) == CONNECTION_OK, PQsetnonblocking(handle, 1) == 0 else {
                throw fail(String(cString: PQerrorMessage(handle)))
            }
            self.handle = handle
            Self.openCount.withLock { $0 += 1 }
            // Each bound unless the role, the database or the connection's options set it.
            let bounds = Self.sessionBounds.map { name, value in
                "CASE WHEN current_setting('\(name)') IN ('0', '0ms') THEN set_config('\(name)', '\(value)', false) END"
            }
            try runScript("SELECT " + bounds.joined(separator: ", "))
        }

        deinit {
            PQfinish(handle)
            Self.openCount.withLock { $0 -= 1 }
        }

        /// How many connections this process holds open to any server (for tests and the
        /// benchmark's connection budget).
        static let openCount = Locked(0)

        var isConnected: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

        /// The statements prepared on this connection, by their SQL, and the names they have.
        private var preparedNames: [String: String] = [:]
        /// The statements prepared on this connection with SQL's `PREPARE` by their callers (who
        /// run them with `EXECUTE` in a script), by name.
        var preparedByName: Set<String> = []

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
            let result = try execute { handle in
                pointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
                    if let name {
                        return PQsendQueryPrepared(
                            handle, name, Int32(parameters.count), values.baseAddress, lengths, formats, 1)
                    }
                    return PQsendQueryParams(
                        handle, sql, Int32(parameters.count), nil, values.baseAddress, lengths, formats, 1)
                }
            }
            return Self.rows(of: result)
        }

        /// Runs `script`, one or more statements separated by semicolons, as one message of the
        /// simple query protocol; returns the last statement's rows, as text.
        ///
        /// The server reads the whole message before it runs any of it, and runs it as one
        /// transaction (unless it says `BEGIN`/`COMMIT`) that commits before the answer is
        /// sent: a client cut off while sending it, or while the answer travels, holds no lock and
        /// no transaction open on the server. (With the extended protocol the transaction of a
        /// statement stays open until the client's `Sync` message arrives.)
        @discardableResult
        func runScript(_ script: String) throws -> [[Data?]] {
            Self.rows(of: try execute { PQsendQuery($0, script) })
        }

        /// A string literal of `text` for a script (quoted as this connection's settings need).
        func literal(_ text: String) throws -> String {
            guard !text.utf8.contains(0), let quoted = PQescapeLiteral(handle, text, text.utf8.count) else {
                throw Failure(
                    message: "cannot send \(String(reflecting: String(text.prefix(40)))): "
                        + (text.utf8.contains(0)
                            ? "it holds a NUL character" : String(cString: PQerrorMessage(handle))),
                    connectionLost: false, sqlState: "22021")
            }
            defer { PQfreemem(quoted) }
            return String(cString: quoted)
        }

        /// Every row of `result`, each column's bytes (`nil` for NULL).
        private static func rows(of result: OpaquePointer?) -> [[Data?]] {
            defer { PQclear(result) }
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
            PQclear(try execute { PQsendPrepare($0, name, sql, Int32(parameterCount), nil) })
            preparedNames[sql] = name
            return name
        }

        /// Sends a request with `send` and waits, up to ``callBound``, for its results; returns
        /// the last (the caller clears it) once each was checked.
        ///
        /// Past the deadline the connection is ended: its socket is shut down (libpq's later
        /// calls on it fail at once, and the server's session ends when it notices), and the
        /// failure says `timedOut`. Nothing here blocks: the connection is non-blocking, and every
        /// wait is a `poll()` with what remains of the deadline.
        private func execute(_ send: (OpaquePointer) -> Int32) throws -> OpaquePointer? {
            guard !abandoned else {
                throw Failure(
                    message: "the connection was ended after a call timed out", connectionLost: true)
            }
            let deadline = ContinuousClock.now + Self.callBound
            func lost() -> Failure {
                Failure(
                    message: redact(
                        String(cString: PQerrorMessage(handle)).trimmingCharacters(
                            in: .whitespacesAndNewlines)),
                    connectionLost: !isConnected)
            }
            func waitOrAbandon(_ events: Int16) throws {
                guard Self.wait(for: events, on: PQsocket(handle), until: deadline) else {
                    abandon()
                    throw Failure(
                        message:
                            "the server did not answer within \(Self.callBound.components.seconds) s; the connection was ended",
                        connectionLost: true, timedOut: true)
                }
            }
            guard send(handle) == 1 else { throw lost() }
            // The request, out: libpq keeps what the socket does not take yet.
            while true {
                let flushed = PQflush(handle)
                if flushed == 0 { break }
                guard flushed > 0 else { throw lost() }
                try waitOrAbandon(Int16(POLLIN | POLLOUT))
                guard PQconsumeInput(handle) == 1 else { throw lost() }
            }
            // Every result, until libpq says the request is answered.
            var results: [OpaquePointer] = []
            var returned: OpaquePointer?
            defer { for result in results where result != returned { PQclear(result) } }
            while true {
                while PQisBusy(handle) == 1 {
                    try waitOrAbandon(Int16(POLLIN))
                    guard PQconsumeInput(handle) == 1 else { throw lost() }
                }
                guard let result = PQgetResult(handle) else { break }
                results.append(result)
            }
            for result in results { try check(result) }
            guard let last = results.last else { throw lost() }
            returned = last
            return last
        }

        /// Ends the connection after a call passed its deadline.
        private func abandon() {
            abandoned = true
            let socket = PQsocket(handle)
            if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }

        /// Waits until `socket` is ready for `events`, or `deadline` passed (then answers false).
        static func wait(for events: Int16, on socket: Int32, until deadline: ContinuousClock.Instant) -> Bool
        {
            guard socket >= 0 else { return true }  // libpq reports the failure itself
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            while true {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                let ready = poll(&descriptor, 1, max(1, left.wholeMilliseconds))
                if ready > 0 { return true }
                if ready < 0 && errno != EINTR { return true }  // let libpq meet the error
            }
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
        /// descriptor is ignored); answers whether `socket` has.
        @discardableResult
        static func waitForInput(on socket: Int32, orWake wake: Int32, upTo timeout: Duration) -> Bool {
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, timeout.wholeMilliseconds)
            return descriptors[0].revents != 0
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
