import Foundation

/// A store that could not be opened: reads find nothing, writes throw the reason.
final class UnavailableStore: PreferenceStore {
    let reason: any Error
    let description: String
    private let observers = StoreObservers(label: "Unavailable")

    init(reason: any Error, description: String) {
        self.reason = reason
        self.description = description
    }

    func value(forKey key: String) -> PropertyListValue? { nil }
    func snapshot() -> [StoreKey: PropertyListValue] { [:] }
    func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        throw reason
    }
    func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        observers.add(handler)
    }
}
