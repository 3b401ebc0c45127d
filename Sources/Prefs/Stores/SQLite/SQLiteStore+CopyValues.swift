import Foundation

/// Copying a whole `UserDefaults` domain into a store, once (the domain is left as it is).
extension SQLiteStore {
    /// What ``copyValues(fromUserDefaultsDomain:using:)`` did.
    ///
    /// ```swift
    /// let report = try store.copyValues(fromUserDefaultsDomain: "com.example.app")
    /// print(report.copied.count, "values copied")
    /// ```
    public struct CopyReport: Sendable, Equatable {
        /// The keys copied from the domain.
        public let copied: [String]
        /// Keys the store already had; the store's value was kept.
        public let keptExisting: [String]
        /// True when the domain had been copied in before, so nothing was done this time.
        public let alreadyCopied: Bool
    }

    /// Copies every value of a `UserDefaults` domain (on Linux, Foundation's plist for it) into
    /// this store, types kept, in one transaction, once: a marker in the store records that it
    /// ran, and later calls do nothing.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: path)
    /// try store.copyValues(fromUserDefaultsDomain: "com.example.app")
    /// ```
    ///
    /// A key the store already has keeps the store's value. A value that is not a property-list
    /// value (nothing Prefs can store), or one past a value's limit (8 MiB, which `UserDefaults`
    /// takes: ``StoreError/Kind/tooLarge``), makes the whole move throw, with nothing copied.
    /// On iOS and its siblings the copy runs inside the system's background time: refused or
    /// taken back, it throws ``StoreError/Kind/expired`` with nothing copied and the move not
    /// marked done: call it again when the app is active, and write nothing through the store
    /// before it has copied (a key the store already has keeps the store's value). The domain
    /// itself is left as it is. The app's own bundle identifier reads `UserDefaults.standard`; a
    /// domain that does not exist, or is empty, copies nothing and is not marked as moved (a
    /// later call moves what appears); one Foundation cannot open throws ``StoreError``
    /// (``StoreError/Kind/suiteRefused``).
    @discardableResult
    public func copyValues(fromUserDefaultsDomain domain: String, using defaults: UserDefaults? = nil) throws
        -> CopyReport
    {
        // The app's own domain is `UserDefaults.standard`'s: Apple platforms refuse it as a suite name.
        guard
            let source = defaults
                ?? (domain == Bundle.main.bundleIdentifier
                    ? UserDefaults.standard : UserDefaults(suiteName: domain))
        else {
            throw StoreError.userDefaults(.suiteRefused, suite: domain)
        }
        // No such domain (yet), or an empty one: nothing is copied, and the move is not marked as
        // done, so that a later call moves what appears. (Foundation on Linux answers an empty
        // dictionary for a domain that does not exist.)
        let objects = source.persistentDomain(forName: domain).flatMap { $0.isEmpty ? nil : $0 }
        var converted: [String: PropertyListValue] = [:]
        var unconvertible: [String] = []
        // A suite's key descriptions (`prefs.keys:…`) are the suite's own, not values to move.
        for (key, object) in objects ?? [:] where !UserDefaultsStore.isReservedKey(key) {
            if let value = PropertyListValue(foundationObject: object) {
                converted[key] = value
            } else {
                unconvertible.append(key)
            }
        }
        guard unconvertible.isEmpty else {
            throw StoreError(
                path: path, kind: .other,
                detail:
                    "cannot move in \(domain): values of \(unconvertible.sorted()) are not property-list values"
            )
        }
        guard objects != nil else {
            let isMarked = try core.hasMovedIn(marker: "moved-in:\(domain)")
            return CopyReport(copied: [], keptExisting: [], alreadyCopied: isMarked)
        }
        // The values and the mark in one SQLite transaction: a process killed at any instant
        // leaves both or neither, so a second call never copies anything again.
        let values = Dictionary(uniqueKeysWithValues: converted.map { (StoreKey($0.key), $0.value) })
        guard let outcome = try core.moveIn(values, marker: "moved-in:\(domain)") else {
            return CopyReport(copied: [], keptExisting: [], alreadyCopied: true)
        }
        let report = CopyReport(copied: outcome.copied, keptExisting: outcome.kept, alreadyCopied: false)
        return report
    }
}
