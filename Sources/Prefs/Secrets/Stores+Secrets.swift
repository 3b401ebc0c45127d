import Foundation

extension SQLiteStore {
    /// The file's name without `.sqlite`: the domain ``SQLiteStore/defaultPath(domain:)`` named it
    /// after (the same in every container the app's files move to).
    package var domainForSecrets: String? {
        let name = (path as NSString).lastPathComponent
        return name.hasSuffix(".sqlite") ? String(name.dropLast(".sqlite".count)) : name
    }

    /// Moves the journal into SQLite, zeroes the journal's old records, and rebuilds SQLite's
    /// file without free pages or old page images (see `SQLiteStoreCore.eraseRemovedValues`).
    package func eraseRemovedValues() throws {
        try core.eraseRemovedValues()
    }
}

extension UserDefaultsStore {
    /// The defaults domain.
    package var domainForSecrets: String? { domain }
}

extension Preferences {
    /// The store whose files hold the values: a synced store's local one.
    var filesStore: (any PrefsOwnStore)? { Self.filesStore(of: store) }

    /// The same for `store`, before a handle on it exists.
    static func filesStore(of store: any PreferenceStore) -> (any PrefsOwnStore)? {
        ((store as? SyncedStore)?.local ?? store) as? any PrefsOwnStore
    }
}
