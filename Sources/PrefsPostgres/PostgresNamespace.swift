import PrefsSupport

#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// Refuses a namespace `PostgresStore` or `PostgresRemote` (named by `store`) cannot take:
    /// empty, longer than ``PostgresStore/maximumNamespaceBytes`` bytes of UTF-8, with a NUL
    /// character, or with a line break where `allowingLineBreaks` is false (`PostgresStore` has
    /// refused them since its first release; `PostgresRemote` never did).
    func checkNamespace(_ namespace: String, allowingLineBreaks: Bool, store: String) throws {
        let limit = PostgresStore.maximumNamespaceBytes
        guard !namespace.isEmpty, allowingLineBreaks || !namespace.contains("\n"),
            !namespace.utf8.contains(0),
            namespace.utf8.count <= limit
        else {
            throw StoreError(
                kind: .invalidNamespace, store: store,
                message:
                    "a namespace must be non-empty, at most \(limit) bytes of UTF-8 (this one has \(namespace.utf8.count)), without \(allowingLineBreaks ? "" : "line breaks or ")NUL characters"
            )
        }
    }

    /// One row of `prefs_entries` as the cache applies it: a value, or `nil` for a removal, and the
    /// sequence number of the write that made it.
    struct EntryRow: Equatable {
        let key: StoreKey
        let value: PropertyListValue?
        let seq: Int64
    }

    /// The cache of one namespace: values, and for each key the sequence number of the write its
    /// cached value (or absence) comes from.
    ///
    /// The writer (after its commit) and the listener (after a notification) both apply rows here,
    /// and a row is applied only over an older one: whichever arrives first, the newest commit wins,
    /// and observers see each key's values in commit order.
    struct NamespaceCache {
        var values: [StoreKey: PropertyListValue] = [:]
        var versions: [StoreKey: Int64] = [:]
        /// The highest sequence number seen: catching up reads the rows after it.
        var lastSeq: Int64 = 0
    }

    /// One store's namespace as this process sees it: its cache and observers.
    ///
    /// The store's writes and the server's hub (``PostgresHub``, which listens for every store of
    /// the process) both bring changes here.
    final class Shared: Sendable {
        let namespace: String
        let cache = Locked(NamespaceCache())
        let observers = StoreObservers(label: "Postgres")
        /// Whether the hub has lost its listening connection since this store last caught up.
        let stale = Locked(false)
        /// The namespace's own `NOTIFY` channel.
        let channel: String
        /// Notifications received and catch-ups run (the queries a listener makes), for tests
        /// and the benchmark.
        let activity = Locked((notifications: 0, catchUps: 0))
        /// Where what the store notices goes (values it cannot decode): the store's own handler,
        /// never stderr directly.
        let diagnostics: PreferenceDiagnostics
        /// How the store names itself in what it reports.
        let storeDescription: String

        init(namespace: String, description: String, diagnostics: PreferenceDiagnostics) {
            self.namespace = namespace
            storeDescription = description
            self.diagnostics = diagnostics
            channel = PostgresNotification.channel(for: namespace)
        }

        /// Applies the rows that notifications carry, in the order they arrived (commit order);
        /// reads the rows instead when a notification does not carry them.
        func receive(_ payloads: [String], using connection: PostgresConnection) throws {
            guard !payloads.isEmpty else { return }
            activity.withLock { $0.notifications += payloads.count }
            for payload in payloads {
                // Namespaces compared byte by byte, as the server compares them (Swift's `==`
                // takes canonically equivalent spellings for one).
                switch PostgresNotification.parse(payload) {
                case .rows(let from, let rows) where from.utf8.elementsEqual(namespace.utf8):
                    apply(rows)
                case .readRows(let from) where from.utf8.elementsEqual(namespace.utf8):
                    try catchUp(using: connection)
                case .rows, .readRows:
                    continue  // another namespace whose channel name collides with ours
                case nil:
                    try catchUp(using: connection)
                }
            }
        }

        /// Reads the rows written since the last one seen and applies them.
        func catchUp(using connection: PostgresConnection) throws {
            activity.withLock { $0.catchUps += 1 }
            let after = cache.withLock { $0.lastSeq }
            let result = try connection.run(
                "SELECT key, value, seq FROM prefs_entries WHERE namespace = $1 AND seq > $2 ORDER BY seq",
                [.text(namespace), .int64(after)], prepared: true)
            apply(rows(result))
        }

        /// Reads every row of the namespace (tombstones too, for their sequence numbers; rows of a
        /// first-release table all have number 0).
        func load(using connection: PostgresConnection) throws {
            activity.withLock { $0.catchUps += 1 }
            let result = try connection.run(
                "SELECT key, value, seq FROM prefs_entries WHERE namespace = $1 ORDER BY seq",
                [.text(namespace)], prepared: true)
            apply(rows(result))
        }

        /// Decodes `SELECT key, value, seq` rows; a value this release cannot decode is reported and
        /// left out (never taken for a removal).
        private func rows(_ result: [[Data?]]) -> [EntryRow] {
            var rows: [EntryRow] = []
            var undecodable: [String] = []
            for row in result {
                guard row.count == 3, let key = row[0], let seq = row[2].flatMap(int64) else { continue }
                let name = String(decoding: key, as: UTF8.self)
                if let blob = row[1] {
                    guard let value = try? PropertyListValue(storedEncoding: blob) else {
                        undecodable.append(name)
                        continue
                    }
                    rows.append(EntryRow(key: StoreKey(name), value: value, seq: seq))
                } else {
                    rows.append(EntryRow(key: StoreKey(name), value: nil, seq: seq))
                }
            }
            if !undecodable.isEmpty {
                diagnostics.report(
                    PreferenceIssue(
                        key: "", store: storeDescription,
                        kind: .storeNotice(
                            "cannot decode the values of \(undecodable.sorted()); ignoring them")))
            }
            return rows
        }

        // MARK: - This process's own commit, published in its place

        /// The sequence number of this process's write that is committing, while it commits: the
        /// listener holds back later rows until that write is published, so observers hear
        /// writes in the server's commit order across keys too, not only per key.
        private let localCommit = NSCondition()
        private nonisolated(unsafe) var committingSeq: Int64?

        /// Called by the writer with its sequence number before `COMMIT`.
        func beginLocalCommit(_ seq: Int64) {
            localCommit.withLock { committingSeq = seq }
        }

        /// Called by the writer once its rows are applied (or its commit failed).
        func endLocalCommit() {
            localCommit.withLock {
                committingSeq = nil
                localCommit.broadcast()
            }
        }

        /// Waits (briefly: a commit's round trip) while a local write older than `seq` is between
        /// its `COMMIT` and its publication.
        private func waitForLocalCommit(before seq: Int64) {
            let deadline = Date(timeIntervalSinceNow: 5)
            localCommit.withLock {
                while let committing = committingSeq, committing < seq {
                    if !localCommit.wait(until: deadline) { break }
                }
            }
        }

        /// Applies rows newer than what the cache holds for their keys, and publishes what changed,
        /// under the cache's lock so observers hear each key's values in commit order.
        func apply(_ rows: [EntryRow]) {
            guard !rows.isEmpty else { return }
            waitForLocalCommit(before: rows.map(\.seq).max() ?? 0)
            cache.withLock { cache in
                var changed: [StoreKey: PropertyListValue?] = [:]
                for row in rows {
                    cache.lastSeq = max(cache.lastSeq, row.seq)
                    guard row.seq > cache.versions[row.key, default: -1] else { continue }
                    cache.versions[row.key] = row.seq
                    if cache.values[row.key] != row.value {
                        cache.values[row.key] = row.value
                        changed[row.key] = .some(row.value)
                    }
                }
                observers.publish(StoreChange(newValues: changed))
            }
        }
    }

    /// A big-endian 8-byte integer, as PostgreSQL sends a `bigint` in binary format.
    func int64(_ bytes: Data) -> Int64? {
        guard bytes.count == 8 else { return nil }
        return Int64(bitPattern: bytes.reduce(0) { ($0 << 8) | UInt64($1) })
    }

    /// The first column of the first row, or `nil` when there is no row or it is NULL.
    func firstCell(_ rows: [[Data?]]) -> Data? {
        guard let row = rows.first, let cell = row.first else { return nil }
        return cell
    }
#endif
