import Foundation

/// Key descriptions kept in the suite itself, each under a reserved key (`prefs.keys:<key>`), so
/// every process of an App Group reads them (a companion suite beside it is not in the group).
/// The store hides the reserved keys: they are not among its keys, its snapshot or the `prefs`
/// tool's listings, and no write through the store may use one.
extension UserDefaultsStore {
    /// The start of every reserved key that holds a description.
    static let descriptionPrefix = ReservedKeys.descriptionPrefix

    /// Whether `key` is one of the store's reserved keys (a key description's), never a value.
    ///
    /// ```swift
    /// UserDefaultsStore.isReservedKey("prefs.keys:volume")  // true
    /// ```
    package static func isReservedKey(_ key: String) -> Bool {
        key.utf8.starts(with: descriptionPrefix.utf8)
    }

    /// The companion domain earlier releases kept descriptions in, `<domain>.prefs-keys`: still
    /// read, and emptied into the suite at the next publication.
    var formerDescriptionsDomain: String? { domain.map { $0 + ".prefs-keys" } }

    /// The key descriptions published to the suite (and any still in the former companion domain).
    package func keyDescriptions() -> [String: PropertyListValue] {
        formerDescriptions().merging(suiteDescriptions()) { $1 }
    }

    /// Keeps key descriptions in the suite, each replacing the one before.
    ///
    /// Writes only when one changed. Descriptions still in the former companion domain move into
    /// the suite, and the companion domain is removed.
    package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
        let former = formerDescriptions()
        let current = suiteDescriptions()
        var wanted = descriptions
        for (key, description) in former where current[key] == nil && wanted[key] == nil {
            wanted[key] = description
        }
        let changed = wanted.filter { current[$0.key] != $0.value }
        if !changed.isEmpty {
            try writeReserved(changed.map { (StoreKey(Self.descriptionPrefix + $0.key), $0.value) })
        }
        guard !former.isEmpty, let name = formerDescriptionsDomain,
            let companion = UserDefaults(suiteName: name)
        else { return }
        companion.removePersistentDomain(forName: name)
        #if !canImport(Darwin)
            guard companion.synchronize() else {
                throw StoreError.userDefaults(.writeFailed, suite: name, keys: former.keys.sorted())
            }
        #endif
    }

    /// The descriptions an earlier release kept in the companion domain.
    private func formerDescriptions() -> [String: PropertyListValue] {
        guard let name = formerDescriptionsDomain else { return [:] }
        return (defaults.persistentDomain(forName: name) ?? [:]).compactMapValues(
            PropertyListValue.init(foundationObject:))
    }

    /// The descriptions in the suite itself, by the key each describes.
    private func suiteDescriptions() -> [String: PropertyListValue] {
        var descriptions: [String: PropertyListValue] = [:]
        for (key, object) in persistentObjects() where Self.isReservedKey(key) {
            descriptions[String(key.dropFirst(Self.descriptionPrefix.count))] = PropertyListValue(
                foundationObject: object)
        }
        return descriptions
    }
}
