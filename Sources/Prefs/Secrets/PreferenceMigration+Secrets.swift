import Foundation

extension PreferenceMigration {
    /// A step moving the value an older release kept as a plain preference under `oldKey` into
    /// the system's secret store as `key`'s secret, and erasing every plain copy.
    ///
    /// The plain copies are the store's value and the bytes it left in the store's files (the
    /// SQLite store's journal records, free pages and write-ahead log). Nothing happens when no
    /// plain value is stored. Like ``rename(version:_:to:)``, it names the old key as stored
    /// (often the secret key's own name).
    ///
    /// ```swift
    /// extension Preferences.Keys {
    ///     static let apiToken = Key<String?>("apiToken", storedAs: .secret)
    /// }
    /// try prefs.migrate([.moveToSecret(version: 1, "apiToken", to: .apiToken)])
    /// ```
    ///
    /// The secret is stored before the plain value is removed, in the step's transaction: a
    /// failure of either leaves the plain value where it was, and the step runs again at the
    /// next `migrate`. A plain value the key's type cannot read is not moved: the step fails,
    /// naming its type (never the value). When the files cannot be cleaned after the move
    /// (another process still reading the old pages), `migrate` throws, saying so. Like every
    /// step, it runs once: a plain value written after it ran (by an older release still
    /// running, or after a downgrade) stays where it was.
    public static func moveToSecret<Value>(
        version: Int, _ oldKey: String, to key: Preferences.Key<Value>
    ) -> PreferenceMigration {
        let old = oldKey
        var step = PreferenceMigration(version: version, name: "move \(old) into the secret store") {
            update in
            guard key.isSecret else {
                throw PreferenceError(
                    .notRepresentable,
                    "\"\(key.name)\" is not a secret key: declare it with storedAs: .secret")
            }
            guard let plain = update[raw: old] else { return }
            do {
                _ = try key.decode(plain)
            } catch {
                throw PreferenceError(
                    .typeMismatch,
                    "the plain value of \"\(old)\" is a \(plain.typeName), not a \(swiftSpelling(of: Value.self)) (its value is not shown); left in place"
                )
            }
            let stamp = try update.preferences.putSecret(plain, named: key.name)
            update[raw: Preferences.secretStampName(key.name)] = stamp
            update[raw: old] = nil
        }
        step.afterCommit = { preferences in
            do {
                try preferences.filesStore?.eraseRemovedValues()
            } catch {
                throw PreferenceError(
                    .migrationFailed,
                    "\"\(old)\" moved into the secret store, but its old bytes could not be erased from the store's files: \(error)",
                    underlying: error)
            }
        }
        return step
    }
}
