import Foundation

/// Key descriptions in a companion domain, `<domain>.prefs-keys`, beside the suite: never among
/// its values, so code reading the suite with `UserDefaults` sees nothing new.
extension UserDefaultsStore {
    /// The companion domain's name, or `nil` for a store without a domain name.
    var descriptionsDomain: String? { domainName.map { $0 + ".prefs-keys" } }

    /// The key descriptions published to the companion domain.
    package func keyDescriptions() -> [String: PropertyListValue] {
        guard let domain = descriptionsDomain, let companion = UserDefaults(suiteName: domain) else {
            return [:]
        }
        return (companion.persistentDomain(forName: domain) ?? [:]).compactMapValues(
            PropertyListValue.init(foundationObject:))
    }

    /// Keeps key descriptions in the companion domain, each replacing the one before; writes
    /// only when one changed.
    package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
        guard let domain = descriptionsDomain, let companion = UserDefaults(suiteName: domain) else {
            throw StoreError.userDefaults(.suiteRefused, suite: descriptionsDomain)
        }
        var kept = companion.persistentDomain(forName: domain) ?? [:]
        let current = kept.compactMapValues(PropertyListValue.init(foundationObject:))
        let changed = descriptions.filter { current[$0.key] != $0.value }
        guard !changed.isEmpty else { return }
        for (key, description) in changed { kept[key] = description.foundationObject }
        companion.setPersistentDomain(kept, forName: domain)
        #if !canImport(Darwin)
            guard companion.synchronize() else {
                throw StoreError.userDefaults(.writeFailed, suite: domain, keys: changed.keys.sorted())
            }
        #endif
    }
}
