import PrefsEngine
import PrefsSupport

#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// What every `PostgresStore` of this process on one server shares: one connection that
    /// listens for all their namespaces, on one thread, and one connection that writes.
    ///
    /// A store used to hold two connections of its own, so a fleet of instances with a few stores
    /// each ran out of PostgreSQL's `max_connections` (100 by default) at a few dozen instances. A
    /// process now holds at most two connections per server (per connection string), whatever
    /// the number of stores and namespaces:
    ///
    /// - **Listening.** One thread `LISTEN`s on the channel of every namespace a store of this
    ///   process uses (`LISTEN` when the first store of a namespace arrives, `UNLISTEN` when the
    ///   last goes) and hands each notification to the stores of its namespace. A store that opens
    ///   is loaded on this connection too, right after its channel is listened to (so nothing
    ///   written meanwhile is missed); the table is created or checked there first. After a lost
    ///   connection the thread reconnects with back-off, and every store catches up (the server
    ///   does not replay notifications).
    /// - **Writing.** Transactions of all stores run on one connection, opened by the first
    ///   write, one at a time (a transaction holds it from `BEGIN` to `COMMIT`). A process that
    ///   only reads and observes holds the listening connection alone. A transaction started
    ///   inside another's body on this thread (on another store of the server) runs on a
    ///   short-lived connection of its own: waiting for the shared one would wait for itself.
    ///
    /// The hub lives while a store uses it; the last store to go closes both connections.
    final class PostgresHub: @unchecked Sendable {
        let url: String
        let secrets: ConnectionSecrets
        /// The writing connection, shared by every transaction of the process on this server.
        let writer: TransactionLock<WriterState>

        /// The stores listening, by channel, and whether the listening thread must stop.
        private struct Membership {
            var stores: [String: [ObjectIdentifier: Shared]] = [:]
            /// Stores opening: each is loaded once its channel is listened to, then told.
            var joining: [Joining] = []
            var stopped = false
        }

        /// A store waiting to be loaded by the listening thread.
        private final class Joining: @unchecked Sendable {
            let shared: Shared
            private let done = DispatchSemaphore(value: 0)
            private let outcome = Locked<(any Error)??>(nil)

            init(_ shared: Shared) { self.shared = shared }

            /// Tells the waiting store how its load ended (the first call only).
            func finish(_ error: (any Error)?) {
                let first = outcome.withLock { outcome in
                    guard outcome == nil else { return false }
                    outcome = .some(error)
                    return true
                }
                if first { done.signal() }
            }

            /// Waits for the load; throws its failure.
            func wait() throws {
                guard done.wait(timeout: .now() + 60) == .success else {
                    throw PostgresConnection.Failure(
                        message: "the server did not answer within 60 seconds", connectionLost: true)
                }
                if case .some(.some(let error)) = outcome.withLock({ $0 }) { throw error }
            }
        }
        private let membership = Locked(Membership())
        /// A pipe whose reading end ends the listening thread's wait when membership changes.
        private let wakePipe: (read: Int32, write: Int32)
        private let finished = DispatchSemaphore(value: 0)

        // MARK: - One hub per server

        private static let hubs = Locked<[String: (hub: PostgresHub, users: Int)]>([:])

        /// The hub for `url`, made (and its thread started) for the first store on it.
        ///
        /// Every call is paired with ``release()``.
        static func acquire(url: String, secrets: ConnectionSecrets) -> PostgresHub {
            hubs.withLock { hubs in
                if let entry = hubs[url] {
                    hubs[url] = (entry.hub, entry.users + 1)
                    return entry.hub
                }
                let hub = PostgresHub(url: url, secrets: secrets)
                hubs[url] = (hub, 1)
                hub.start()
                return hub
            }
        }

        /// Lets go of the hub; the last user stops its thread and closes its connections.
        func release() {
            let last = Self.hubs.withLock { hubs in
                guard let entry = hubs[url], entry.hub === self else { return false }
                if entry.users > 1 {
                    hubs[url] = (self, entry.users - 1)
                    return false
                }
                hubs[url] = nil
                return true
            }
            guard last else { return }
            membership.withLock { $0.stopped = true }
            wake()
            // Briefly: no thread should still be using libpq while the process exits.
            _ = finished.wait(timeout: .now() + 2)
            writer.closeConnection()
        }

        private init(url: String, secrets: ConnectionSecrets) {
            self.url = url
            self.secrets = secrets
            writer = TransactionLock(
                WriterState(), store: "PostgreSQL (\(secrets.safeDescription))", timeout: .seconds(30))
            wakePipe = SystemCall.nonBlockingPipe() ?? (-1, -1)
        }

        deinit {
            if wakePipe.read >= 0 { SystemCall.close(wakePipe.read) }
            if wakePipe.write >= 0 { SystemCall.close(wakePipe.write) }
        }

        // MARK: - Stores joining and leaving

        /// Loads `shared`'s namespace on the listening connection, once its channel is listened
        /// to, and from then on delivers its changes; throws when the server cannot be reached or
        /// the table cannot be used (the store is then not a member).
        func join(_ shared: Shared) throws {
            let joining = Joining(shared)
            membership.withLock { $0.joining.append(joining) }
            wake()
            do {
                try joining.wait()
            } catch {
                leave(shared)
                throw error
            }
        }

        /// Stops delivering to `shared` (its channel is no longer listened to when it was the last).
        func leave(_ shared: Shared) {
            membership.withLock { membership in
                membership.stores[shared.channel]?[ObjectIdentifier(shared)] = nil
                if membership.stores[shared.channel]?.isEmpty == true {
                    membership.stores[shared.channel] = nil
                }
                membership.joining.removeAll { $0.shared === shared }
            }
            wake()
        }

        private func wake() {
            var byte: UInt8 = 1
            _ = SystemCall.write(wakePipe.write, &byte, 1)
        }

        private func drainWakePipe() {
            var bytes = [UInt8](repeating: 0, count: 64)
            while SystemCall.read(wakePipe.read, &bytes, bytes.count) > 0 {}
        }

        // MARK: - Listening

        private func start() {
            let thread = Thread { [self] in
                listen()
                finished.signal()
            }
            thread.name = "prefs.postgres.listen"
            thread.start()
        }

        private func listen() {
            var connection: PostgresConnection?
            var listening: Set<String> = []
            var backoff: Duration = .milliseconds(50)
            var quietSince = ContinuousClock.now
            while !membership.withLock({ $0.stopped }) {
                // One look at the membership: the channels to listen to and the stores to load
                // come from the same moment, so a store is read once, after its channel is
                // listened to (one joining later is in the next look).
                let joining = membership.withLock { membership in
                    defer { membership.joining = [] }
                    for joining in membership.joining {
                        membership.stores[joining.shared.channel, default: [:]][
                            ObjectIdentifier(joining.shared)] =
                            joining.shared
                    }
                    return membership.joining
                }
                do {
                    var reconnected = false
                    if connection == nil {
                        let fresh = try PostgresConnection(url: url, redact: secrets.redact)
                        try Schema.prepare(fresh)
                        connection = fresh
                        listening = []
                        reconnected = true
                    }
                    guard let live = connection else { continue }
                    let (channels, everyone) = membership.withLock { membership in
                        (Set(membership.stores.keys), membership.stores.values.flatMap(\.values))
                    }
                    // The channels are `prefs_` and hex digits: safe to write into the statements.
                    for channel in channels.subtracting(listening) { try live.run("LISTEN \(channel)") }
                    for channel in listening.subtracting(channels) { try live.run("UNLISTEN \(channel)") }
                    listening = channels
                    // NOTIFY does not replay: after a reconnection every store reads what it missed.
                    let opening = Set(joining.map { ObjectIdentifier($0.shared) })
                    for shared in reconnected ? everyone : []
                    where !opening.contains(ObjectIdentifier(shared)) {
                        try shared.catchUp(using: live)
                        shared.stale.withLock { $0 = false }
                    }
                    for joining in joining {
                        do {
                            try joining.shared.load(using: live)
                            joining.finish(nil)
                        } catch let failure as PostgresConnection.Failure where !failure.connectionLost {
                            joining.finish(failure)
                        }
                    }
                    backoff = .milliseconds(50)
                    if reconnected { quietSince = .now }
                    // A connection silent for long may be dead without TCP knowing (a peer that
                    // holds packets): a statement, bounded, tells.
                    if ContinuousClock.now - quietSince >= PostgresConnection.quietBeforeCheck {
                        try live.run(PostgresConnection.livenessProbe)
                        quietSince = .now
                    }
                    let notifications = try live.notifications(
                        waitingUpTo: .milliseconds(500), wake: wakePipe.read)
                    if !notifications.isEmpty { quietSince = .now }
                    drainWakePipe()
                    try deliver(notifications, using: live)
                } catch {
                    connection = nil
                    // A store opening now fails at once (its `init` throws); the others serve
                    // what they have, marked stale, and catch up after reconnecting.
                    for joining in joining { joining.finish(error) }
                    for shared in members() { shared.stale.withLock { $0 = true } }
                    Thread.sleep(forTimeInterval: backoff.timeInterval)
                    backoff = min(backoff * 2, .seconds(2))
                }
            }
        }

        /// Every store listening.
        private func members() -> [Shared] {
            membership.withLock { $0.stores.values.flatMap(\.values) }
        }

        /// Hands each notification's payload to the stores of its channel, in arrival (commit)
        /// order per store.
        private func deliver(
            _ notifications: [(channel: String, payload: String)], using connection: PostgresConnection
        ) throws {
            guard !notifications.isEmpty else { return }
            var payloads: [String: [String]] = [:]
            for notification in notifications {
                payloads[notification.channel, default: []].append(notification.payload)
            }
            for (channel, payloads) in payloads {
                let stores = membership.withLock { Array(($0.stores[channel] ?? [:]).values) }
                for shared in stores { try shared.receive(payloads, using: connection) }
            }
        }
    }

    /// The writing connection and its reconnection back-off.
    struct WriterState {
        var connection: PostgresConnection?
        var nextAttempt = ContinuousClock.now
        var backoff: Duration = .milliseconds(50)
        var lastFailure = ""
    }

    extension PostgresHub {
        /// The writing connection, reconnecting (with back-off between failed attempts) when lost.
        func connectedWriter(_ state: inout WriterState, store: String) throws -> PostgresConnection {
            if let connection = state.connection, connection.isConnected { return connection }
            state.connection = nil
            let now = ContinuousClock.now
            guard now >= state.nextAttempt else {
                throw StoreError(
                    kind: .connectionLost, store: store,
                    message: "the server is unreachable (\(state.lastFailure)); retrying with back-off")
            }
            do {
                let connection = try PostgresConnection(url: url, redact: secrets.redact)
                state.connection = connection
                state.backoff = .milliseconds(50)
                return connection
            } catch let failure as PostgresConnection.Failure {
                state.lastFailure = failure.message
                state.nextAttempt = now + state.backoff
                state.backoff = min(state.backoff * 2, .seconds(2))
                throw StoreError(kind: .connectionLost, store: store, message: failure.message)
            }
        }
    }

    extension TransactionLock where State == WriterState {
        /// Closes the writing connection (the last store on the server went).
        func closeConnection() {
            _ = try? withLock(during: "closing") { $0.connection = nil }
        }
    }
#endif
