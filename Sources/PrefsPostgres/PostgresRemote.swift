import PrefsSupport

#if PREFS_POSTGRESQL
    import Foundation
    import Prefs
    import PrefsEngine

    /// A ``SyncRemote`` on a PostgreSQL server: the replicas of a ``SyncedStore`` meet in one
    /// namespace of the `prefs_sync` table.
    ///
    /// The server keeps, for each key, the entry with the highest stamp: a push of a lower one
    /// is refused in the statement that would write it (its `WHERE` compares stamps), and
    /// answered with the one held. Pushes to a namespace take its advisory lock and number their
    /// rows from one sequence under it, so the numbers grow in commit order and a pull after a
    /// number misses nothing. A push notifies the `prefs_sync` channel; ``observe(_:)`` listens.
    ///
    /// Offline first: creating a remote connects to nothing (a ``SyncedStore`` on an unreachable
    /// server starts, reads and writes); each push and pull connects when it must, and throws a
    /// ``StoreError`` of kind `.connectionLost` when it cannot.
    ///
    /// ```swift
    /// let remote = try PostgresRemote(url: "postgresql://localhost/app", namespace: "settings")
    /// let store = try SyncedStore(local: try SQLiteStore(path: path), remote: remote)
    /// ```
    public final class PostgresRemote: SyncRemote, @unchecked Sendable {
        // @unchecked: the connection is used only under `link`'s lock.

        /// The one connection: statements, and listening once the remote is observed.
        struct Link {
            var connection: PostgresConnection?
            /// Whether `connection` has run `LISTEN` (a new connection has not).
            var listening = false
        }

        /// The namespace the replicas share.
        public let namespace: String
        /// `PostgresRemote(server, namespace: …)`, without the password.
        public let description: String
        private let url: String
        private let secrets: ConnectionSecrets
        private let diagnostics: PreferenceDiagnostics
        fileprivate let link = Locked(Link())
        /// What this remote's listener heard pushes write, which answers pulls without a query.
        fileprivate let heard = Locked(HeardPushes())
        /// The observers' handlers, and the thread that listens for them (while there are any).
        private let observers = Locked<(handlers: [UUID: @Sendable () -> Void], listener: SyncListener?)>(
            ([:], nil))

        /// The channel every push notifies, with its namespace as the payload.
        static let channel = "prefs_sync"

        /// A remote on the server at `url` (a libpq connection string or URL), in `namespace`.
        ///
        /// Throws only for a malformed `url` or namespace; it does not connect. Values the server
        /// holds that this release cannot decode are reported to `diagnostics` and skipped.
        ///
        /// ```swift
        /// let remote = try PostgresRemote(url: "postgresql:///app?host=/run/postgresql", namespace: "team")
        /// ```
        public init(url: String, namespace: String, diagnostics: PreferenceDiagnostics = .shared)
            throws
        {
            do {
                secrets = try ConnectionSecrets(url)
            } catch let failure as PostgresConnection.Failure {
                throw StoreError(kind: .connectionFailed, store: "PostgresRemote", message: failure.message)
            }
            description = "PostgresRemote(\(secrets.safeDescription), namespace: \(namespace))"
            try checkNamespace(namespace, allowingLineBreaks: true, store: description)
            self.url = url
            self.namespace = namespace
            self.diagnostics = diagnostics
        }

        /// Writes each entry whose stamp is above the one held for its key; returns the held
        /// entries of the others.
        public func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
            try withConnection { connection in
                try connection.inTransaction {
                    try connection.run(
                        "SELECT pg_advisory_xact_lock(hashtext($1))", [.text("prefs_sync:" + namespace)],
                        prepared: true)
                    // Where the namespace stands: the listeners link this push to the one before.
                    let previous =
                        firstCell(
                            try connection.run(
                                "SELECT coalesce(max(seq), 0)::bigint FROM prefs_sync WHERE namespace = $1",
                                [.text(namespace)], prepared: true)
                        ).flatMap(int64) ?? 0
                    var refused: [SyncEntry] = []
                    var written: [SyncEntry] = []
                    var last = previous
                    for entry in entries {
                        let rows: [[Data?]]
                        do {
                            rows = try connection.run(
                                Self.upsert,
                                [
                                    .text(namespace), .text(entry.key),
                                    entry.value.map { .bytes($0.storedEncoding()) } ?? .null,
                                    .int64(Int64(clamping: entry.stamp.wallMilliseconds)),
                                    .int64(Int64(entry.stamp.counter)), .text(entry.stamp.replica),
                                ], prepared: true)
                        } catch let failure as PostgresConnection.Failure
                            where failure.tooLarge || failure.sqlState?.hasPrefix("54") == true
                        {
                            // Too large for the server (class 54, program limit exceeded): the
                            // transaction is rolled back, and the store sends the others again.
                            throw StoreError(
                                kind: .tooLarge, store: description, message: failure.message,
                                keys: [entry.key])
                        }
                        if let seq = firstCell(rows).flatMap(int64) {
                            written.append(entry)
                            last = max(last, seq)
                        } else if let held = try held(entry.key, on: connection), held.stamp > entry.stamp {
                            refused.append(held)
                        }
                    }
                    guard !written.isEmpty else { return refused }
                    // Delivered at the commit, to every listener of the channel: what was
                    // written, when it fits, so that no listener need ask.
                    let push = SyncPush(
                        namespace: namespace, previous: previous, last: last, entries: written)
                    try connection.run(
                        "SELECT pg_notify($1, $2)", [.text(Self.channel), .text(push.payload)],
                        prepared: true)
                    return refused
                }
            }
        }

        /// The entries written after `cursor` (the number of the last row a pull saw), from the
        /// server.
        public func pull(after cursor: PropertyListValue?) throws -> (
            entries: [SyncEntry], cursor: PropertyListValue?
        ) {
            var after: Int64 = 0
            if case .integer(let number)? = cursor { after = number }
            return try withConnection { connection in
                let rows = try connection.run(
                    """
                    SELECT key, value, wall, counter, replica, seq FROM prefs_sync
                    WHERE namespace = $1 AND seq > $2 ORDER BY seq
                    """, [.text(namespace), .int64(after)], prepared: true)
                var last = after
                let entries = rows.compactMap { row -> SyncEntry? in
                    if let seq = row[5].flatMap(int64) { last = max(last, seq) }
                    return entry(from: row)
                }
                return (entries, .integer(last))
            }
        }

        /// Calls `handler` after each push to this namespace by any replica (and once after each
        /// connection, since notifications sent meanwhile are not replayed), until the
        /// observation is cancelled.
        ///
        /// The remote listens on the connection its pushes and pulls use (one connection per
        /// remote, and so per machine for a shared store), from a thread that waits on it between
        /// statements.
        public func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
            let id = UUID()
            let started = observers.withLock { observers -> SyncListener? in
                observers.handlers[id] = { handler(.changed) }
                guard observers.listener == nil else { return nil }
                observers.listener = SyncListener(remote: self)
                return observers.listener
            }
            started?.start()
            return StoreObservation { [weak self] in
                guard let self else { return }
                let stopping = observers.withLock { observers -> SyncListener? in
                    observers.handlers[id] = nil
                    guard observers.handlers.isEmpty else { return nil }
                    defer { observers.listener = nil }
                    return observers.listener
                }
                stopping?.stop()
            }
        }

        /// Tells every observer that pushes may have come.
        fileprivate func announce() {
            for handler in observers.withLock({ Array($0.handlers.values) }) { handler() }
        }

        /// Keeps the pushes to this namespace that `payloads` describe (one told without its
        /// entries makes the next pull ask the server, and so does text that is not a push);
        /// returns whether the observers should be told.
        ///
        /// Called under the link's lock, where the notifications were taken: pushes are kept in
        /// the order the connection received them, and never after a `forget()` that followed.
        func hear(_ payloads: [String]) -> Bool {
            var ours = false
            for payload in payloads {
                guard let push = SyncPush(payload: payload) else {
                    // Another release's, or damaged: what it says is unknown, so ask the server.
                    heard.withLock { $0.forget() }
                    ours = true
                    continue
                }
                // Byte by byte, as the server compares namespaces.
                guard push.namespace.utf8.elementsEqual(namespace.utf8) else { continue }
                heard.withLock { $0.add(push) }
                ours = true
            }
            return ours
        }

        // MARK: - The connection and the table

        /// The row held for `key`, as an entry.
        private func held(_ key: String, on connection: PostgresConnection) throws -> SyncEntry? {
            let rows = try connection.run(
                "SELECT key, value, wall, counter, replica FROM prefs_sync WHERE namespace = $1 AND key = $2",
                [.text(namespace), .text(key)], prepared: true)
            return rows.first.flatMap(entry(from:))
        }

        /// An entry from a row (key, value, wall, counter, replica); `nil`, reported, for a value
        /// this release cannot decode.
        private func entry(from row: [Data?]) -> SyncEntry? {
            guard row.count >= 5, let keyBytes = row[0], let key = String(validatingUTF8Bytes: keyBytes),
                let wall = row[2].flatMap(int64), wall >= 0, let counter = row[3].flatMap(int64),
                let counter = UInt32(exactly: counter), let replicaBytes = row[4],
                let replica = String(validatingUTF8Bytes: replicaBytes)
            else { return nil }
            var value: PropertyListValue?
            if let bytes = row[1] {
                guard let decoded = try? PropertyListValue(storedEncoding: bytes) else {
                    diagnostics.report(
                        PreferenceIssue(
                            key: key, store: description,
                            kind: .storeNotice("a synced value this release cannot decode was skipped")))
                    return nil
                }
                value = decoded
            }
            return SyncEntry(
                key: key, value: value,
                stamp: SyncStamp(wallMilliseconds: UInt64(wall), counter: counter, replica: replica))
        }

        /// Runs `body` on the connection, connecting (and making the table) first when needed.
        ///
        /// A failure on a connection opened before drops it, and `body` runs once more on a new
        /// one (the server may have restarted meanwhile, which libpq does not always tell
        /// from the statement's failure): a push that failed was rolled back, and a pull only
        /// reads. A failure on a new connection is the call's: `.connectionLost` when the link
        /// is gone, `.server` when the server refused the statement.
        private func withConnection<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
            var heardPushes = false
            defer { if heardPushes { announce() } }  // after the lock, with no lock held
            return try link.withLock { link in
                var reused = link.connection != nil
                while true {
                    do {
                        let connection = try connected(&link)
                        defer {
                            // Notifications that came with the results.
                            let payloads = ((try? connection.receivedNotifications(consuming: false)) ?? [])
                                .map(
                                    \.payload)
                            if hear(payloads) { heardPushes = true }
                        }
                        return try body(connection)
                    } catch let failure as PostgresConnection.Failure {
                        // Class 08 (connection exception) and 57 (operator intervention, such
                        // as a server shutting down) end the connection too.
                        let lost =
                            failure.connectionLost || link.connection?.isConnected != true
                            || ["08", "57"].contains(failure.sqlState?.prefix(2) ?? "")
                        // Only a lost connection is replaced (a statement the server refuses
                        // would otherwise cost a new connection each time, and its listening).
                        if lost { drop(&link) }
                        if reused {
                            reused = false
                            continue
                        }
                        throw StoreError(
                            kind: lost ? .connectionLost : .server, store: description,
                            message: failure.message)
                    }
                }
            }
        }

        /// The link's connection, made (with the table) when there is none.
        fileprivate func connected(_ link: inout Link) throws -> PostgresConnection {
            if let connection = link.connection { return connection }
            let fresh = try PostgresConnection(url: url, redact: secrets.redact)
            try SyncSchema.prepare(fresh)
            link.connection = fresh
            link.listening = false
            return fresh
        }

        /// Ends the link's connection: what it would have heard until the next is not heard.
        fileprivate func drop(_ link: inout Link) {
            link.connection = nil
            link.listening = false
            heard.withLock { $0.forget() }
        }

        /// Writes an entry over the row held for its key only when its stamp is above the row's
        /// (replicas compared by their bytes, as `SyncStamp` compares them); returns a row when
        /// it wrote.
        static let upsert = """
            INSERT INTO prefs_sync(namespace, key, value, wall, counter, replica, seq)
            VALUES ($1, $2, $3, $4, $5, $6, nextval('prefs_sync_seq'))
            ON CONFLICT (namespace, key) DO UPDATE SET
                value = excluded.value, wall = excluded.wall, counter = excluded.counter,
                replica = excluded.replica, seq = excluded.seq
            WHERE (prefs_sync.wall, prefs_sync.counter, prefs_sync.replica)
                < (excluded.wall, excluded.counter, excluded.replica)
            RETURNING seq
            """
    }

    /// The table of synced entries, made once per database (safely when several processes start
    /// at once), beside `PostgresStore`'s tables.
    enum SyncSchema {
        static func prepare(_ connection: PostgresConnection) throws {
            try connection.preparingSchema(advisoryLock: 7_370_216) {
                try connection.run(
                    """
                    CREATE TABLE IF NOT EXISTS prefs_sync (
                        namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA,
                        wall BIGINT NOT NULL, counter BIGINT NOT NULL, replica TEXT COLLATE "C" NOT NULL,
                        seq BIGINT NOT NULL, PRIMARY KEY (namespace, key))
                    """)
                try connection.run("CREATE SEQUENCE IF NOT EXISTS prefs_sync_seq")
                try connection.run(
                    "CREATE INDEX IF NOT EXISTS prefs_sync_by_seq ON prefs_sync(namespace, seq)")
            }
        }
    }

    /// The thread behind ``PostgresRemote/observe(_:)``: `LISTEN prefs_sync` on the remote's
    /// connection, then a wait on its socket between statements (the lock is not held while
    /// waiting; notifications that arrive with a statement's results are taken by the statement),
    /// reconnecting (and telling the observers, since what was sent meanwhile is lost) after the
    /// server went away.
    final class SyncListener: @unchecked Sendable {
        // @unchecked: `stopped` and the pipe are what other threads touch; the connection is
        // the remote's, used under its lock.
        private let remote: PostgresRemote
        private let stopped = AtomicWord()
        private let wakePipe: (read: Int32, write: Int32)
        private let finished = DispatchSemaphore(value: 0)

        init(remote: PostgresRemote) {
            self.remote = remote
            wakePipe = SystemCall.nonBlockingPipe() ?? (-1, -1)
        }

        deinit {
            if wakePipe.read >= 0 { SystemCall.close(wakePipe.read) }
            if wakePipe.write >= 0 { SystemCall.close(wakePipe.write) }
        }

        func start() {
            let thread = Thread { [self] in
                listen()
                finished.signal()
            }
            thread.name = "prefs.sync.listen"
            thread.start()
        }

        /// Ends the thread, waiting briefly for it (no libpq call outlives the observation).
        func stop() {
            guard stopped.add(1) == 1 else { return }
            var byte: UInt8 = 1
            _ = SystemCall.write(wakePipe.write, &byte, 1)
            _ = finished.wait(timeout: .now() + 2)
        }

        private func listen() {
            var backoff: Duration = .milliseconds(50)
            while stopped.load() == 0 {
                // Listening on the connection (made when there is none), under the lock.
                var announce = false
                let listening = remote.link.withLock { link -> (ObjectIdentifier, Int32)? in
                    do {
                        let connection = try remote.connected(&link)
                        if !link.listening {
                            try connection.run("LISTEN \(PostgresRemote.channel)")
                            link.listening = true
                            remote.heard.withLock { $0.forget() }  // what was sent meanwhile was not heard
                            announce = true
                        }
                        // Received with a statement's results, and so invisible to the wait below.
                        if remote.hear(try connection.receivedNotifications(consuming: false).map(\.payload))
                        {
                            announce = true
                        }
                        return (ObjectIdentifier(connection), connection.socket)
                    } catch {
                        remote.drop(&link)
                        return nil
                    }
                }
                if announce { remote.announce() }
                guard let (listened, socket) = listening else {
                    Thread.sleep(forTimeInterval: backoff.timeInterval)
                    backoff = min(backoff * 2, .seconds(2))
                    continue
                }
                backoff = .milliseconds(50)
                // The wait, without the lock: statements run meanwhile.
                PostgresConnection.waitForInput(on: socket, orWake: wakePipe.read, upTo: .seconds(1))
                var bytes = [UInt8](repeating: 0, count: 16)
                while SystemCall.read(wakePipe.read, &bytes, bytes.count) > 0 {}
                guard stopped.load() == 0 else { break }
                let heardPushes = remote.link.withLock { link -> Bool in
                    // Unless the connection changed meanwhile (the next turn listens on the new one).
                    guard let connection = link.connection, ObjectIdentifier(connection) == listened else {
                        return false
                    }
                    do {
                        return remote.hear(
                            try connection.receivedNotifications(consuming: true).map(\.payload))
                    } catch {
                        remote.drop(&link)
                        return false
                    }
                }
                if heardPushes { remote.announce() }
            }
        }
    }

    extension PostgresRemote: SyncRemoteHearingPushes {
        /// From what the listener heard, when the pushes since `cursor` all reached it: no query
        /// (with many replicas, the server's work per write would otherwise grow with a pull
        /// from each); else from the server.
        package func pullHeard(after cursor: PropertyListValue?) throws -> (
            entries: [SyncEntry], cursor: PropertyListValue?
        ) {
            if case .integer(let number)? = cursor, let answer = heard.withLock({ $0.entries(after: number) })
            {
                return (answer.entries, .integer(answer.cursor))
            }
            return try pull(after: cursor)
        }
    }
#endif
