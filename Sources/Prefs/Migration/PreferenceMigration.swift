import Foundation

/// One numbered step of a versioned migration: rename a key, transform a value, remove a key, or
/// run custom code.
///
/// Every step takes its version first, so a list of steps reads in order.
///
/// ```swift
/// let steps: [PreferenceMigration] = [
///     .rename(version: 1, "user_name", to: "username"),
///     .transform(version: 2, "volume") { old in
///         guard case .integer(let percent) = old else { return old }
///         return .double(Double(percent) / 100)
///     },
///     .remove(version: 3, "legacyFlag"),
///     .custom(version: 4, "count launches") { p in p[.launchCount] += 1 },
/// ]
/// let version = try prefs.migrate(steps)
/// ```
public struct PreferenceMigration: Sendable {
    /// The step's number: steps run in increasing order, each once; the store records each step
    /// that ran by its number.
    public let version: Int
    /// What the step does, for errors and logs.
    public let name: String
    let apply: @Sendable (inout Preferences.Update) throws -> Void
    /// Run after the step's transaction committed, when the step ran in this call.
    var afterCommit: (@Sendable (Preferences) throws -> Void)? = nil

    /// A step running `body` with typed access to the preferences.
    ///
    /// ```swift
    /// try prefs.migrate([.custom(version: 4, "reset the cache size") { p in p.reset(.cacheSize) }])
    /// ```
    ///
    /// `body` is `@Sendable` (another process's migration may be running the same steps, and the
    /// store may call it on another thread), so it cannot assign a captured `var`. To report what
    /// a step did, write it to the store (a key of its own, read after `migrate`), or capture a
    /// `Mutex` or another `Sendable` box and set that.
    public static func custom(
        version: Int, _ name: String, _ body: @escaping @Sendable (inout Preferences.Update) throws -> Void
    ) -> PreferenceMigration {
        PreferenceMigration(version: version, name: name, apply: body)
    }

    /// A step moving the value of `oldKey` to `newKey` (replacing what `newKey` held); nothing when
    /// `oldKey` holds nothing.
    ///
    /// ```swift
    /// try prefs.migrate([.rename(version: 1, "user_name", to: "username")])
    /// ```
    public static func rename(version: Int, _ oldKey: String, to newKey: String) -> PreferenceMigration {
        .custom(version: version, "rename \(oldKey) to \(newKey)") { update in
            guard let value = update[raw: oldKey] else { return }
            update[raw: oldKey] = nil
            update[raw: newKey] = value
        }
    }

    /// This step, run only when the app's own run-once marker `marker` is absent, and setting the
    /// marker (to `value`) in the same transaction when it runs: for a migration an app already
    /// guarded with a key of its own (`"didMigrateToV2"`, `"SS_App_runOnce__x"`), so that neither
    /// the old code nor this step runs it twice.
    ///
    /// ```swift
    /// try prefs.migrate([
    ///     .rename(version: 1, "user_name", to: "username").markedBy("didMigrateToV2")
    /// ])
    /// ```
    ///
    /// When the marker exists, the step counts as done: the version still moves past it.
    public func markedBy(_ marker: String, setting value: PropertyListValue = .bool(true))
        -> PreferenceMigration
    {
        let apply = self.apply
        var marked = PreferenceMigration(version: version, name: "\(name), marked by \(marker)") { update in
            guard update[raw: marker] == nil else { return }
            try apply(&update)
            update[raw: marker] = value
        }
        marked.afterCommit = afterCommit
        return marked
    }

    /// A step removing `key`.
    ///
    /// ```swift
    /// try prefs.migrate([.remove(version: 3, "legacyFlag")])
    /// ```
    public static func remove(version: Int, _ key: String) -> PreferenceMigration {
        .custom(version: version, "remove \(key)") { update in update[raw: key] = nil }
    }

    /// A step replacing the value of `key` with what `transform` returns (`nil` removes it);
    /// nothing when `key` holds nothing.
    ///
    /// ```swift
    /// try prefs.migrate([.transform(version: 2, "volume") { old in .double(0.5) }])
    /// ```
    public static func transform(
        version: Int, _ key: String,
        _ transform: @escaping @Sendable (PropertyListValue) throws -> PropertyListValue?
    ) -> PreferenceMigration {
        .custom(version: version, "transform \(key)") { update in
            guard let value = update[raw: key] else { return }
            update[raw: key] = try transform(value)
        }
    }
}

extension Preferences {
    /// Applies the steps that have not run on this store, in order, each in its own transaction
    /// that also records that it ran; returns the version of the last step.
    ///
    /// ```swift
    /// let reached = try prefs.migrate([.rename(version: 1, "old", to: "new")])
    /// ```
    ///
    /// Each step runs exactly once, even when several processes migrate at once (a step's
    /// transaction rechecks its record). The store records each step that ran by its version,
    /// under `prefs.migration:` and `versionKey` (which names the list: two lists of steps in one
    /// store take two names), so a step a later release adds runs once — even one numbered below a
    /// step that ran (it then runs after it: number new steps past the last to keep the order).
    /// The records are the library's own: not among ``storedKeys``, and ``removeAll()`` keeps them.
    ///
    /// Prefs 0.1 kept the version reached under `versionKey` itself: the first call with steps
    /// that finds it there records each of its steps up to that version as run, and removes it.
    ///
    /// A failing step throws a ``PreferenceError`` of kind
    /// ``PreferenceError/Kind-swift.struct/migrationFailed`` whose ``PreferenceError/underlying`` is
    /// the step's error; the steps before it stay applied, nothing of it is.
    @discardableResult
    public func migrate(_ steps: [PreferenceMigration], versionKey: String = "PrefsMigrationVersion") throws
        -> Int
    {
        for (previous, step) in zip(steps, steps.dropFirst()) where step.version <= previous.version {
            throw PreferenceError(
                .migrationFailed,
                "migration step \(step.version) comes after step \(previous.version): versions must increase")
        }
        let records = steps.map { ReservedKeys.migrationPrefix + "\(versionKey) step \($0.version)" }
        if !steps.isEmpty, let former = store.storedValue(forKey: versionKey),
            (try? Int.deserialize(former)) != nil
        {
            try update { update in
                guard let former = update[raw: versionKey], let reached = try? Int.deserialize(former) else {
                    return
                }
                for (step, record) in zip(steps, records)
                where step.version <= reached && update[raw: record] == nil {
                    update[raw: record] = .date(Date())
                }
                update[raw: versionKey] = nil
            }
        }
        for (step, record) in zip(steps, records) where store.value(forKey: record) == nil {
            do {
                let ran = try update { update in
                    guard update[raw: record] == nil else { return false }  // another process ran it
                    try step.apply(&update)
                    update[raw: record] = .date(Date())
                    return true
                }
                if ran, let afterCommit = step.afterCommit { try afterCommit(self) }
            } catch {
                throw PreferenceError(
                    .migrationFailed,
                    "migration step \(step.version) (\(step.name)) failed: \(error); earlier steps are kept",
                    underlying: error)
            }
        }
        return steps.last?.version ?? 0
    }
}
