import Foundation

/// The names Prefs keeps its own records under, beside the values in a store: a ``SyncedStore``'s
/// records of syncing (`prefs.sync:…`), a `UserDefaultsStore`'s key descriptions
/// (`prefs.keys:…`), the records of the migrations that ran (`prefs.migration:…`), and the
/// stamps beside secret keys (`prefs.secret:…`).
///
/// They are the library's bookkeeping, never a user's values: ``Preferences`` leaves them out of
/// ``Preferences/storedKeys``, ``Preferences/dictionaryRepresentation()`` and the observation of
/// every key, and ``Preferences/removeAll()`` keeps them; the `prefs` tool lists a domain without
/// them and shows them only when asked. A read or write of one by its exact name is not refused
/// here (the stores that own a prefix refuse writes to it themselves).
///
/// ```swift
/// ReservedKeys.contains("prefs.migration:Settings.age <- old_age")  // true
/// ReservedKeys.contains("volume")  // false
/// ```
package enum ReservedKeys {
    /// A ``SyncedStore``'s records of syncing.
    package static let syncPrefix = "prefs.sync:"
    /// A `UserDefaultsStore`'s key descriptions, one per key.
    package static let descriptionPrefix = "prefs.keys:"
    /// The records of the migrations that ran, one per mapping entry or step.
    package static let migrationPrefix = "prefs.migration:"
    /// The stamps beside secret keys, changed by every write of the secret (never its value).
    package static let secretPrefix = "prefs.secret:"
    /// Every prefix above.
    package static let prefixes = [syncPrefix, descriptionPrefix, migrationPrefix, secretPrefix]

    /// Whether `name` is one of the library's records; a look at the first byte first, since
    /// listings ask for every key.
    package static func contains(_ name: String) -> Bool {
        guard name.utf8.first == UInt8(ascii: "p") else { return false }
        return prefixes.contains { name.utf8.starts(with: $0.utf8) }
    }

    /// `values` without the library's records.
    package static func withoutRecords(_ values: [StoreKey: PropertyListValue]) -> [StoreKey:
        PropertyListValue]
    {
        values.filter { !contains($0.key.name) }
    }
}
