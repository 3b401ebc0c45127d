import Foundation

/// Moving in: copying a whole `UserDefaults` domain into a store, once.
extension SQLiteStore {
    /// What ``moveIn(fromUserDefaultsDomain:using:)`` did.
    ///
    /// ```swift
    /// let report = try store.moveIn(fromUserDefaultsDomain: "com.example.app")
    /// print(report.copied.count, "values moved in")
    /// ```
    public struct MoveInReport: Sendable, Equatable {
        /// The keys copied from the domain.
        public let copied: [String]
        /// Keys the store already had; the store's value was kept.
        public let keptExisting: [String]
        /// True when the domain had been moved in before, so nothing was done this time.
        public let alreadyMovedIn: Bool
    }

    /// Copies every value of a `UserDefaults` domain (on Linux, Foundation's plist for it) into
    /// this store, types kept, in one transaction, once: a marker in the store records that it
    /// ran, and later calls do nothing.
    ///
    /// ```swift
    /// let store = try SQLiteStore(path: path)
    /// try store.moveIn(fromUserDefaultsDomain: "com.example.app")
    /// ```
    ///
    /// A key the store already has keeps the store's value. A value that is not a property-list
    /// value (nothing Prefs can store) makes the whole move throw, with nothing copied. The domain
    /// itself is left as it is. The app's own bundle identifier reads `UserDefaults.standard`; a
    /// domain that does not exist, or is empty, copies nothing and is not marked as moved (a
    /// later call moves what appears); one Foundation cannot open throws.
    @discardableResult
    public func moveIn(fromUserDefaultsDomain domain: String, using defaults: UserDefaults? = nil) throws
        -> MoveInReport
    {
        // The app's own domain is `UserDefaults.standard`'s: Apple platforms refuse it as a suite name.
        guard
            let source = defaults
                ?? (domain == Bundle.main.bundleIdentifier
                    ? UserDefaults.standard : UserDefaults(suiteName: domain))
        else {
            throw SQLiteStoreError(
                path: path, kind: .other,
                detail: "cannot move in: \(UserDefaultsStoreError(kind: .suiteRefused, suite: domain))")
        }
        // No such domain (yet), or an empty one: nothing is copied, and the move is not marked as
        // done, so that a later call moves what appears. (Foundation on Linux answers an empty
        // dictionary for a domain that does not exist.)
        let objects = source.persistentDomain(forName: domain).flatMap { $0.isEmpty ? nil : $0 }
        var converted: [String: PropertyListValue] = [:]
        var unconvertible: [String] = []
        for (key, object) in objects ?? [:] {
            if let value = PropertyListValue(foundationObject: object) {
                converted[key] = value
            } else {
                unconvertible.append(key)
            }
        }
        guard unconvertible.isEmpty else {
            throw SQLiteStoreError(
                path: path, kind: .other,
                detail:
                    "cannot move in \(domain): values of \(unconvertible.sorted()) are not property-list values"
            )
        }
        let marker = "moved-in:\(domain)"
        let isMarked = {
            try self.core.withDatabase(during: "moveIn") { database in
                try self.core.perform {
                    try database.connection.integer(
                        "SELECT 1 FROM prefs_meta WHERE name = ?1", [.text(marker)]) != nil
                }
            }
        }
        if try isMarked() { return MoveInReport(copied: [], keptExisting: [], alreadyMovedIn: true) }
        guard objects != nil else { return MoveInReport(copied: [], keptExisting: [], alreadyMovedIn: false) }
        // The values go through the journal like any write, then the mark into SQLite. A process
        // killed between the two leaves the values without the mark: the next call copies
        // nothing more (the keys exist) and marks it.
        let report = try core.write { transaction in
            var copied: [String] = []
            var kept: [String] = []
            for (key, value) in converted {
                if transaction[key] == nil {
                    transaction[key] = value
                    copied.append(key)
                } else {
                    kept.append(key)
                }
            }
            return MoveInReport(copied: copied.sorted(), keptExisting: kept.sorted(), alreadyMovedIn: false)
        }
        try core.withDatabase(during: "moveIn") { database in
            try core.perform {
                try database.connection.run(
                    "INSERT INTO prefs_meta(name, value) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
                    [.text(marker), .text(ISO8601DateFormatter().string(from: Date()))])
            }
        }
        return report
    }
}
