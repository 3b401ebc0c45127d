import Foundation

/// One numbered step of a versioned migration: rename a key, transform a value, remove a key, or
/// run custom code.
///
/// ```swift
/// let steps: [PreferenceMigration] = [
///     .rename("user_name", to: "username", version: 1),
///     .transform("volume", version: 2) { old in
///         guard case .integer(let percent) = old else { return old }
///         return .double(Double(percent) / 100)
///     },
///     .remove("legacyFlag", version: 3),
///     .custom(version: 4, "count launches") { p in p[.launchCount] += 1 },
/// ]
/// let version = try prefs.migrate(steps)
/// ```
public struct PreferenceMigration: Sendable {
    /// The step's number: steps run in increasing order, each once.
    public let version: Int
    /// What the step does, for errors and logs.
    public let name: String
    let apply: @Sendable (inout Preferences.Update) throws -> Void

    /// A step running `body` with typed access to the preferences.
    ///
    /// ```swift
    /// .custom(version: 4, "reset the cache size") { p in p.reset(.cacheSize) }
    /// ```
    public static func custom(
        version: Int, _ name: String, _ body: @escaping @Sendable (inout Preferences.Update) throws -> Void
    ) -> PreferenceMigration {
        PreferenceMigration(version: version, name: name, apply: body)
    }

    /// A step moving the value of `oldKey` to `newKey` (replacing what `newKey` held); nothing when
    /// `oldKey` holds nothing.
    ///
    /// ```swift
    /// .rename("user_name", to: "username", version: 1)
    /// ```
    public static func rename(_ oldKey: String, to newKey: String, version: Int) -> PreferenceMigration {
        .custom(version: version, "rename \(oldKey) to \(newKey)") { update in
            guard let value = update.rawValue(oldKey) else { return }
            update.setRawValue(nil, oldKey)
            update.setRawValue(value, newKey)
        }
    }

    /// A step removing `key`.
    ///
    /// ```swift
    /// .remove("legacyFlag", version: 3)
    /// ```
    public static func remove(_ key: String, version: Int) -> PreferenceMigration {
        .custom(version: version, "remove \(key)") { update in update.setRawValue(nil, key) }
    }

    /// A step replacing the value of `key` with what `transform` returns (`nil` removes it);
    /// nothing when `key` holds nothing.
    ///
    /// ```swift
    /// .transform("volume", version: 2) { old in .double(0.5) }
    /// ```
    public static func transform(
        _ key: String, version: Int,
        _ transform: @escaping @Sendable (PropertyListValue) throws -> PropertyListValue?
    ) -> PreferenceMigration {
        .custom(version: version, "transform \(key)") { update in
            guard let value = update.rawValue(key) else { return }
            update.setRawValue(try transform(value), key)
        }
    }
}

/// Why a migration stopped.
///
/// ```swift
/// catch let error as MigrationError { print(error) }  // migration step 2 (transform volume) failed: …
/// ```
public enum MigrationError: Error, CustomStringConvertible {
    /// A step threw; the steps before it are kept, nothing of it was applied.
    case stepFailed(version: Int, name: String, underlying: any Error)
    /// The steps are not in strictly increasing version order.
    case stepsOutOfOrder(version: Int, after: Int)
    /// A group migration named a property the group does not have.
    case unknownProperty(String, group: String)

    /// One line naming the step or property.
    public var description: String {
        switch self {
        case .stepFailed(let version, let name, let underlying):
            "migration step \(version) (\(name)) failed: \(underlying); earlier steps are kept"
        case .stepsOutOfOrder(let version, let after):
            "migration step \(version) comes after step \(after): versions must increase"
        case .unknownProperty(let property, let group):
            "\(group) has no @Preference property '\(property)'"
        }
    }
}

extension Preferences {
    /// Applies the steps whose version is above the one stored, in order, each in its own
    /// transaction that also records the version reached; returns that version.
    ///
    /// ```swift
    /// let reached = try prefs.migrate([.rename("old", to: "new", version: 1)])
    /// ```
    ///
    /// Each step runs exactly once, even when several processes migrate at once (on a store
    /// shared between processes, a step's transaction rechecks the version). A failing step
    /// throws ``MigrationError/stepFailed(version:name:underlying:)``; the steps before it stay
    /// applied, nothing of it is.
    @discardableResult
    public func migrate(_ steps: [PreferenceMigration], versionKey: String = "PrefsMigrationVersion") throws
        -> Int
    {
        for (previous, step) in zip(steps, steps.dropFirst()) where step.version <= previous.version {
            throw MigrationError.stepsOutOfOrder(version: step.version, after: previous.version)
        }
        let versionKey = Key<Int>(versionKey, default: 0)
        var reached = self[versionKey]
        for step in steps where step.version > reached {
            do {
                reached = try update { update in
                    let current = update[versionKey]
                    guard step.version > current else { return current }  // another process ran it
                    try step.apply(&update)
                    update[versionKey] = step.version
                    return step.version
                }
            } catch {
                throw MigrationError.stepFailed(version: step.version, name: step.name, underlying: error)
            }
        }
        return max(reached, self[versionKey])
    }
}
