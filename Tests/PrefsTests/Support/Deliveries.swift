import Dispatch
import Testing

@testable import Prefs
@testable import PrefsEngine

extension PreferenceStore {
    /// Returns once the store's observers have been handed every change it announced before the
    /// call: its delivery queue is serial, so waiting for it to drain is the marker after which a
    /// test may assert that nothing more was delivered (instead of sleeping and hoping).
    ///
    /// ```swift
    /// prefs[.volume] = 0.1
    /// prefs.store.waitForEveryDelivery()
    /// #expect(changes.isEmpty)
    /// ```
    func waitForEveryDelivery() {
        switch self {
        case let store as SQLiteStore: store.observers.waitForDelivery()
        case let store as MemoryStore: store.observers.waitForDelivery()
        case let store as UserDefaultsStore: store.observers.waitForDelivery()
        default: Issue.record("no delivery marker for \(type(of: self)): add its observers here")
        }
    }
}
