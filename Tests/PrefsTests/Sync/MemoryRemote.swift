import Foundation
import Prefs
import PrefsSupport

/// A sync server in memory, shared by the replicas of a test: for each key the entry it holds,
/// a change number per key for cursors, and the hints it sends.
///
/// `lastWriterWins`: it keeps whatever arrived last, as iCloud's key-value storage does, rather
/// than the highest stamp (the replicas must then correct it).
final class MemorySyncServer: Sendable {
    private struct State {
        var entries: [String: SyncEntry] = [:]
        var changedAt: [String: Int] = [:]
        var changes = 0
        var listeners: [UUID: @Sendable () -> Void] = [:]
    }

    private let state = Locked(State())
    let lastWriterWins: Bool

    init(lastWriterWins: Bool = false) { self.lastWriterWins = lastWriterWins }

    /// The entries it holds, by key.
    var entries: [String: SyncEntry] { state.withLock { $0.entries } }

    fileprivate func push(_ entries: [SyncEntry]) -> [SyncEntry] {
        var refused: [SyncEntry] = []
        let listeners = state.withLock { state in
            for entry in entries {
                if let held = state.entries[entry.key], !lastWriterWins, held.stamp >= entry.stamp {
                    if held.stamp > entry.stamp { refused.append(held) }
                    continue
                }
                state.changes += 1
                state.entries[entry.key] = entry
                state.changedAt[entry.key] = state.changes
            }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener() }
        return refused
    }

    fileprivate func pull(after cursor: PropertyListValue?) -> (
        entries: [SyncEntry], cursor: PropertyListValue?
    ) {
        let after: Int
        if case .integer(let number)? = cursor { after = Int(number) } else { after = 0 }
        return state.withLock { state in
            (
                state.changedAt.filter { $0.value > after }.compactMap { state.entries[$0.key] },
                .integer(Int64(state.changes))
            )
        }
    }

    fileprivate func listen(_ handler: @escaping @Sendable () -> Void) -> StoreObservation {
        let id = UUID()
        state.withLock { $0.listeners[id] = handler }
        return StoreObservation { [self] in state.withLock { $0.listeners[id] = nil } }
    }
}

/// One replica's link to a ``MemorySyncServer``, which a test can cut (`reachable`).
final class MemoryRemote: SyncRemote {
    struct Unreachable: Error, CustomStringConvertible {
        var description: String { "the server cannot be reached" }
    }

    let server: MemorySyncServer
    private let isReachable = Locked(true)
    /// Set: pulls find nothing new, as a pull made just before another replica's push does.
    let pullsNothing = Locked(false)
    /// The entries of the pushes that reached the server.
    let pushed = Locked<[SyncEntry]>([])
    /// How many pushes reached the server.
    let pushes = Locked(0)
    /// Keys it cannot take: a push holding one throws `.tooLarge` naming them and takes nothing
    /// (as PostgreSQL's transaction does).
    let tooLarge = Locked<Set<String>>([])
    /// Called as a push begins, before it reaches the server (a slow network, in a test).
    let beforePush = Locked<(@Sendable () -> Void)?>(nil)

    init(_ server: MemorySyncServer) { self.server = server }

    var description: String { "MemoryRemote" }

    var reachable: Bool {
        get { isReachable.withLock { $0 } }
        set { isReachable.withLock { $0 = newValue } }
    }

    func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
        beforePush.withLock { $0 }?()
        guard reachable else { throw Unreachable() }
        let refused = entries.map(\.key).filter { tooLarge.withLock { $0 }.contains($0) }
        if !refused.isEmpty {
            throw StoreError(kind: .tooLarge, store: description, message: "too large", keys: refused)
        }
        pushed.withLock { $0 += entries }
        pushes.withLock { $0 += 1 }
        return server.push(entries)
    }

    func pull(after cursor: PropertyListValue?) throws -> (entries: [SyncEntry], cursor: PropertyListValue?) {
        guard reachable else { throw Unreachable() }
        if pullsNothing.withLock({ $0 }) { return ([], cursor) }
        return server.pull(after: cursor)
    }

    func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
        server.listen { handler(.changed) }
    }
}
