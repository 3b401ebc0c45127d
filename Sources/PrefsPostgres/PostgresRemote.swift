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
    /// answered with the one held. A push is one message that the server runs whole, without
    /// waiting for the client: inside it, and only there, it takes the namespace's advisory
    /// lock and numbers its rows from one sequence, so the numbers grow in commit order and a
    /// pull after a number misses nothing, while a host cut off mid-push holds nothing. A push
    /// notifies the `prefs_sync` channel; ``observe(_:)`` listens.
    ///
    /// Every call is answered within 10 seconds or fails with `.connectionLost` (the connection
    /// is then ended, and the next call makes a new one); the server ends a session of this
    /// remote that sits in a transaction for 5 seconds, and no statement of it waits for a lock
    /// more than 5 seconds (unless the role or database sets its own bounds). The listening
    /// connection is checked with a statement after 10 silent seconds.
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
            /// When a call last went unanswered past its deadline: a caller that waited for the
            /// lock meanwhile fails at once rather than wait as long again to connect.
            var lastTimeout: ContinuousClock.Instant?
        }

        /// The namespace the replicas share.
        package let namespace: String
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
        ///
        /// Each push is one message to the server (see ``pushScript(_:on:)``), up to
        /// ``entriesPerPush`` entries each: the server decides every key by its stamp, numbers
        /// what it wrote and commits without waiting for this process, so a host cut off in the
        /// middle of a push holds nothing the others wait for.
        public func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
            // One entry per key, byte by byte as the server compares keys: the highest stamp (a
            // lower one would be refused in its favour).
            var byKey: [[UInt8]: SyncEntry] = [:]
            var order: [[UInt8]] = []
            var shadowed: [SyncEntry] = []
            for entry in entries {
                let key = Array(entry.key.utf8)
                guard let other = byKey[key] else {
                    byKey[key] = entry
                    order.append(key)
                    continue
                }
                shadowed.append(other.stamp < entry.stamp ? other : entry)
                if entry.stamp > other.stamp { byKey[key] = entry }
            }
            let unique = order.compactMap { byKey[$0] }
            var refused: [SyncEntry] = []
            var untaken: [String] = []
            var failure: StoreError?
            for start in stride(from: 0, to: unique.count, by: Self.entriesPerPush) {
                let part = Array(unique[start..<min(start + Self.entriesPerPush, unique.count)])
                do {
                    refused += try pushOnce(part)
                } catch let error as StoreError where error.kind == .tooLarge && part.count > 1 {
                    // Which entry the server could not take is not said: each alone.
                    for entry in part {
                        do {
                            refused += try pushOnce([entry])
                        } catch let error as StoreError where error.kind == .tooLarge {
                            untaken.append(entry.key)
                            failure = error
                        }
                    }
                }
            }
            if let failure {
                throw StoreError(kind: .tooLarge, store: description, message: failure.message, keys: untaken)
            }
            for entry in shadowed {
                if let winner = byKey[Array(entry.key.utf8)], winner.stamp > entry.stamp,
                    !refused.contains(where: { Array($0.key.utf8) == Array(entry.key.utf8) })
                {
                    refused.append(winner)
                }
            }
            return refused
        }

        /// The most entries one push message carries (larger pushes are sent in parts, each a
        /// push of its own): its answer stays a few kilobytes, which the server sends at once.
        static let entriesPerPush = 500

        /// Pushes `entries` (one per key) in one message; returns the held entries of those refused.
        private func pushOnce(_ entries: [SyncEntry]) throws -> [SyncEntry] {
            let refusedKeys = try withConnection { connection -> [String] in
                let rows: [[Data?]]
                do {
                    if connection.preparedByName.insert(Self.pushStatementName).inserted {
                        do {
                            _ = try connection.runScript(Self.pushStatement)
                        } catch {
                            connection.preparedByName.remove(Self.pushStatementName)
                            throw error
                        }
                    }
                    rows = try connection.runScript(try pushScript(entries, on: connection))
                } catch let failure as PostgresConnection.Failure
                    where failure.tooLarge || failure.sqlState?.hasPrefix("54") == true
                {
                    // Too large for the server (class 54, program limit exceeded): the
                    // transaction is rolled back, and the store sends the others again.
                    throw StoreError(
                        kind: .tooLarge, store: description, message: failure.message,
                        keys: entries.map(\.key))
                }
                let refused = rows.first?[0].map { String(decoding: $0, as: UTF8.self) } ?? ""
                return refused.split(separator: ",").compactMap { Int($0) }.compactMap { ordinal in
                    entries.indices.contains(ordinal - 1) ? entries[ordinal - 1].key : nil
                }
            }
            guard !refusedKeys.isEmpty else { return [] }
            // The entries held now (refused ones were held above, and stamps only rise), read
            // after the push's transaction.
            return try withConnection { connection in
                try refusedKeys.compactMap { try held($0, on: connection) }
            }
        }

        /// The message of one push: one transaction, run by the server without waiting for the
        /// client once it has the message.
        ///
        /// It takes the namespace's advisory lock (the one every Prefs release's pushes take),
        /// then runs the push's statement (``pushStatement``, prepared once per connection), whose
        /// snapshot is taken after the lock, so it sees every push before. The lock is held from
        /// that point to the commit, within this one message: numbers are given in commit order,
        /// so a pull after a number misses nothing, and no client can hold the lock while the
        /// server waits for it (the one thing the server waits for is the message itself, before
        /// it takes anything).
        ///
        /// Answers one row: the ordinals (from 1) of the entries refused, separated by commas.
        func pushScript(_ entries: [SyncEntry], on connection: PostgresConnection) throws -> String {
            let namespace = try connection.literal(namespace)
            func array(_ items: [String], of type: String) -> String {
                "ARRAY[\(items.joined(separator: ", "))]::\(type)[]"
            }
            let keys = try entries.map { try connection.literal($0.key) }
            let values = entries.map { entry in
                entry.value.map { "'\(SyncPush.hex($0.storedEncoding()))'" } ?? "NULL"
            }
            let walls = entries.map { String(Int64(clamping: $0.stamp.wallMilliseconds)) }
            let counters = entries.map { String($0.stamp.counter) }
            let replicas = try entries.map { try connection.literal($0.stamp.replica) }
            return """
                SELECT pg_advisory_xact_lock(hashtext('prefs_sync:' || \(namespace)));
                EXECUTE \(Self.pushStatementName)(\(namespace), \(array(keys, of: "text")), \(array(values, of: "text")), \(array(walls, of: "bigint")), \(array(counters, of: "bigint")), \(array(replicas, of: "text")))
                """
        }

        /// The name of ``pushStatement`` on a connection.
        static let pushStatementName = "prefs_sync_push_1"

        /// A push's statement, prepared once per connection with SQL's `PREPARE`, so that the
        /// server plans it once rather than at every push, while a push stays one message of the
        /// simple query protocol (`EXECUTE` beside the lock).
        ///
        /// Its parameters: the namespace, then the entries as arrays in order (keys, values in
        /// hexadecimal or `NULL` for a removal, walls, counters, replicas). It decides each entry
        /// by its stamp, writes the winners with numbers from the `prefs_sync_seq` sequence, and
        /// notifies the `prefs_sync` channel with what it wrote and the number the namespace
        /// stood at before.
        static var pushStatement: String {
            // A field of the notification: its length in bytes of UTF-8, a colon, itself.
            func field(_ text: String) -> String {
                "octet_length(convert_to(\(text), 'UTF8'))::text || ':' || \(text)"
            }
            let entryFields = [
                "p.key", "coalesce(encode(w.value, 'hex'), '-')", "w.wall::text", "w.counter::text",
                "w.replica",
            ].map(field).joined(separator: " || ")
            let head =
                "\(field("$1")) || \(field("(SELECT seq FROM previous)::text")) || \(field("max(w.seq)::text"))"
            return """
                PREPARE \(pushStatementName)(text, text[], text[], bigint[], bigint[], text[]) AS
                WITH pushed(ord, key, value, wall, counter, replica) AS (
                    SELECT u.ord, u.key, decode(u.value, 'hex'), u.wall, u.counter, u.replica
                    FROM unnest($2, $3, $4, $5, $6) WITH ORDINALITY AS u(key, value, wall, counter, replica, ord)),
                previous AS (SELECT coalesce(max(seq), 0)::bigint AS seq FROM prefs_sync WHERE namespace = $1),
                decided AS (
                    SELECT p.*, (h.key IS NULL OR (h.wall, h.counter, h.replica) < (p.wall, p.counter, p.replica COLLATE "C")) AS wins,
                        (h.key IS NOT NULL AND (h.wall, h.counter, h.replica) > (p.wall, p.counter, p.replica COLLATE "C")) AS loses
                    FROM pushed p LEFT JOIN prefs_sync h ON h.namespace = $1 AND h.key = p.key),
                written AS (
                    INSERT INTO prefs_sync(namespace, key, value, wall, counter, replica, seq)
                    SELECT $1, key, value, wall, counter, replica, nextval('prefs_sync_seq') FROM decided WHERE wins
                    ON CONFLICT (namespace, key) DO UPDATE SET
                        value = excluded.value, wall = excluded.wall, counter = excluded.counter,
                        replica = excluded.replica, seq = excluded.seq
                    WHERE (prefs_sync.wall, prefs_sync.counter, prefs_sync.replica)
                        < (excluded.wall, excluded.counter, excluded.replica)
                    RETURNING key, value, wall, counter, replica, seq),
                told AS (
                    SELECT max(w.seq) AS last, \(head) AS head,
                        string_agg(\(entryFields), '' ORDER BY p.ord) AS body
                    FROM written w JOIN pushed p ON p.key = w.key)
                SELECT (SELECT string_agg(ord::text, ',' ORDER BY ord) FROM decided WHERE loses),
                    CASE WHEN last IS NOT NULL THEN pg_notify('\(channel)',
                        CASE WHEN octet_length(convert_to(head || body, 'UTF8')) <= \(SyncPush.maximumPayloadBytes)
                        THEN head || body ELSE head || '1:*' END) END
                FROM told
                """
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
        /// from the statement's failure): a push that failed was rolled back or is sent again
        /// (each key decided by its stamp, a second time changes nothing), and a pull only
        /// reads. A failure on a new connection, or a call the server did not answer within
        /// `PostgresConnection.callBound`, is the call's: `.connectionLost` when the link is gone,
        /// `.server` when the server refused the statement.
        private func withConnection<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
            var heardPushes = false
            defer { if heardPushes { announce() } }  // after the lock, with no lock held
            let entered = ContinuousClock.now
            return try link.withLock { link in
                var reused = link.connection != nil
                while true {
                    do {
                        let connection = try connected(&link, since: entered)
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
                        if lost { drop(&link, after: failure) }
                        // A call that timed out is not tried again: the bound is the caller's.
                        if reused && !failure.timedOut {
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
        ///
        /// Not when a call timed out after `since` (the caller waited for the link meanwhile): the
        /// server did not answer then, and the caller has waited for it long enough.
        fileprivate func connected(_ link: inout Link, since: ContinuousClock.Instant) throws
            -> PostgresConnection
        {
            if let connection = link.connection { return connection }
            if let timedOut = link.lastTimeout, timedOut > since {
                throw PostgresConnection.Failure(
                    message:
                        "the server did not answer within \(PostgresConnection.callBound.components.seconds) s",
                    connectionLost: true, timedOut: true)
            }
            let fresh = try PostgresConnection(url: url, redact: secrets.redact)
            try SyncSchema.prepare(fresh)
            link.connection = fresh
            link.listening = false
            return fresh
        }

        /// Ends the link's connection: what it would have heard until the next is not heard.
        fileprivate func drop(_ link: inout Link, after error: any Error) {
            if (error as? PostgresConnection.Failure)?.timedOut == true { link.lastTimeout = .now }
            link.connection = nil
            link.listening = false
            heard.withLock { $0.forget() }
        }
    }

    /// The table of synced entries, made once per database, beside `PostgresStore`'s tables.
    ///
    /// A connection first looks, without any lock, whether the table, its sequence and its index
    /// are there (they are, but for the very first connection to a database). Only when one is
    /// missing does it make them, in one message of the simple query protocol whose transaction
    /// holds an advisory lock (concurrent `CREATE … IF NOT EXISTS` can still collide): the server
    /// runs it whole once it has it, so a host that dies or goes silent while sending it or
    /// waiting for its answer holds nothing, and no connection ever waits on another host.
    enum SyncSchema {
        static func prepare(_ connection: PostgresConnection) throws {
            let present = try connection.runScript(
                """
                SELECT to_regclass('prefs_sync') IS NOT NULL AND to_regclass('prefs_sync_seq') IS NOT NULL
                    AND to_regclass('prefs_sync_by_seq') IS NOT NULL
                """)
            guard firstCell(present) != Data("t".utf8) else { return }
            try connection.runScript(
                """
                SET client_min_messages = warning;
                SELECT pg_advisory_xact_lock(7370216);
                CREATE TABLE IF NOT EXISTS prefs_sync (
                    namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA,
                    wall BIGINT NOT NULL, counter BIGINT NOT NULL, replica TEXT COLLATE "C" NOT NULL,
                    seq BIGINT NOT NULL, PRIMARY KEY (namespace, key));
                CREATE SEQUENCE IF NOT EXISTS prefs_sync_seq;
                CREATE INDEX IF NOT EXISTS prefs_sync_by_seq ON prefs_sync(namespace, seq)
                """)
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
            // Since when the listened connection has been silent, and which one it is.
            var quietSince = ContinuousClock.now
            var lastListened: ObjectIdentifier?
            while stopped.load() == 0 {
                // Listening on the connection (made when there is none), under the lock.
                var announce = false
                let entered = ContinuousClock.now
                let listening = remote.link.withLock { link -> (ObjectIdentifier, Int32)? in
                    do {
                        let connection = try remote.connected(&link, since: entered)
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
                        remote.drop(&link, after: error)
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
                let readable = PostgresConnection.waitForInput(
                    on: socket, orWake: wakePipe.read, upTo: .seconds(1))
                if readable || listened != lastListened { quietSince = .now }
                lastListened = listened
                var bytes = [UInt8](repeating: 0, count: 16)
                while SystemCall.read(wakePipe.read, &bytes, bytes.count) > 0 {}
                guard stopped.load() == 0 else { break }
                let heardPushes = remote.link.withLock { link -> Bool in
                    // Unless the connection changed meanwhile (the next turn listens on the new one).
                    guard let connection = link.connection, ObjectIdentifier(connection) == listened else {
                        return false
                    }
                    do {
                        // A connection silent for long may be dead without TCP knowing (a peer
                        // that holds packets): a statement, bounded, tells.
                        if ContinuousClock.now - quietSince >= PostgresConnection.quietBeforeCheck {
                            try connection.run(PostgresConnection.livenessProbe)
                            quietSince = .now
                        }
                        return remote.hear(
                            try connection.receivedNotifications(consuming: true).map(\.payload))
                    } catch {
                        remote.drop(&link, after: error)
                        return false
                    }
                }
                if heardPushes { remote.announce() }
            }
        }
    }

    extension PostgresRemote: SyncRemoteWithoutAccounts {}

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
