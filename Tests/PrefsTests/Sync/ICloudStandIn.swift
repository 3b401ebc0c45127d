import Foundation
import PrefsSupport

@testable import Prefs
@testable import PrefsEngine

/// iCloud's key-value storage as Apple documents it, for the tests on Linux: a server per
/// account, and devices that each keep a copy.
///
/// A device's writes land in its copy at once and wait; ``deliver()`` carries every device's
/// waiting writes to the server in one batch (the server keeps whatever arrives last), then the
/// server's changes to every device of the account, each told with a `serverChange` naming the
/// keys. A device that joins an account gets its copy with `initialSync`; one that switches
/// accounts gets the other account's copy with `accountChange`. The server refuses writes past
/// 1,024 keys or 1 MB of values, telling the device `quotaViolation`. A device can be taken
/// offline: nothing is delivered from it or to it until it is back.
final class ICloudServerStandIn: Sendable {
    fileprivate struct State {
        var accounts: [String: [String: PropertyListValue]] = [:]
        var devices: [ICloudDeviceStandIn] = []
    }

    fileprivate let state = Locked(State())

    /// A device signed in to `account`, its copy made from the server's (`initialSync`); with
    /// `downloaded: false`, one whose first download has not happened yet: it discards writes
    /// until ``ICloudDeviceStandIn/completeInitialDownload()``, as Apple documents.
    func device(account: String, downloaded: Bool = true) -> ICloudDeviceStandIn {
        let device = ICloudDeviceStandIn(server: self, account: account, downloaded: downloaded)
        state.withLock { $0.devices.append(device) }
        if downloaded {
            device.replaceCopy(
                with: state.withLock { $0.accounts[account] ?? [:] }, account: account, reason: .initialSync)
        }
        return device
    }

    /// What the server holds for `account`.
    func contents(of account: String) -> [String: PropertyListValue] {
        state.withLock { $0.accounts[account] ?? [:] }
    }

    /// Carries the devices' waiting writes to the server, then the server's changes to them.
    func deliver() {
        let devices = state.withLock { $0.devices }
        for device in devices {
            let (account, writes) = device.takeWaitingWrites()
            state.withLock { state in
                var held = state.accounts[account] ?? [:]
                for (key, value) in writes {
                    var next = held
                    next[key] = value
                    // Values only: Apple does not count the keys' names.
                    let bytes = next.values.reduce(0) { $0 + ICloudRemote.size(of: $1.foundationObject) }
                    if value != nil,
                        next.count > ICloudRemote.maximumKeys || bytes > ICloudRemote.maximumBytes
                    {
                        device.notify(.quotaViolation, keys: [key])
                        continue
                    }
                    held = next
                }
                state.accounts[account] = held
            }
        }
        for device in devices {
            let account = device.account
            device.merge(state.withLock { $0.accounts[account] ?? [:] })
        }
    }
}

/// One device's copy of its account's key-value store.
final class ICloudDeviceStandIn: UbiquitousStorage {
    private struct State {
        var account: String
        var copy: [String: PropertyListValue] = [:]
        /// Written here and not delivered yet, in order (`nil`: removed).
        var waiting: [(String, PropertyListValue?)] = []
        var listeners: [UUID: @Sendable (UbiquitousChangeReason, [String]) -> Void] = [:]
        /// Whether the first download from the server happened (writes before it are discarded).
        var downloaded: Bool
        /// Out of reach of the server: its writes wait, and the server's changes do not come.
        var offline = false
    }

    private unowned let server: ICloudServerStandIn
    private let state: Locked<State>
    /// How many times `synchronize()` was called.
    let synchronizations = Locked(0)

    fileprivate init(server: ICloudServerStandIn, account: String, downloaded: Bool) {
        self.server = server
        state = Locked(State(account: account, downloaded: downloaded))
    }

    /// The first download from the server: the account's copy, and `initialSync`.
    func completeInitialDownload() {
        replaceCopy(with: server.contents(of: account), account: account, reason: .initialSync)
    }

    var account: String { state.withLock { $0.account } }

    /// Takes the device out of the server's reach (`true`) or back (`false`).
    func setOffline(_ offline: Bool) {
        state.withLock { $0.offline = offline }
    }

    var dictionaryRepresentation: [String: Any] {
        state.withLock { $0.copy.mapValues(\.foundationObject) }
    }

    func set(_ object: Any?, forKey key: String) {
        let value = object.flatMap(PropertyListValue.init(foundationObject:))
        state.withLock { state in
            guard state.downloaded else { return }  // discarded
            state.copy[key] = value
            state.waiting.append((key, value))
        }
    }

    func synchronize() -> Bool {
        synchronizations.withLock { $0 += 1 }
        return true
    }

    func observeExternalChanges(_ handler: @escaping @Sendable (UbiquitousChangeReason, [String]) -> Void)
        -> StoreObservation
    {
        let id = UUID()
        state.withLock { $0.listeners[id] = handler }
        return StoreObservation { [weak self] in self?.state.withLock { $0.listeners[id] = nil } }
    }

    /// Signs in to another account: this device's copy becomes that account's (its writes not
    /// delivered are the other account's, and go nowhere).
    func switchAccount(to account: String) {
        replaceCopy(with: server.contents(of: account), account: account, reason: .accountChange)
    }

    fileprivate func replaceCopy(
        with contents: [String: PropertyListValue], account: String, reason: UbiquitousChangeReason
    ) {
        state.withLock { state in
            state.account = account
            state.copy = contents
            state.waiting = []
            state.downloaded = true
        }
        notify(reason, keys: contents.keys.sorted())
    }

    fileprivate func takeWaitingWrites() -> (String, [(String, PropertyListValue?)]) {
        state.withLock { state in
            guard !state.offline else { return (state.account, []) }
            defer { state.waiting = [] }
            return (state.account, state.waiting)
        }
    }

    /// The server's contents, over writes of this device not delivered yet (they stay).
    fileprivate func merge(_ contents: [String: PropertyListValue]) {
        let changed = state.withLock { state -> [String] in
            guard !state.offline else { return [] }
            let waiting = Set(state.waiting.map(\.0))
            var changed: [String] = []
            for key in Set(contents.keys).union(state.copy.keys) where !waiting.contains(key) {
                if state.copy[key] != contents[key] {
                    state.copy[key] = contents[key]
                    changed.append(key)
                }
            }
            return changed.sorted()
        }
        if !changed.isEmpty { notify(.serverChange, keys: changed) }
    }

    fileprivate func notify(_ reason: UbiquitousChangeReason, keys: [String]) {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener(reason, keys) }
    }
}
