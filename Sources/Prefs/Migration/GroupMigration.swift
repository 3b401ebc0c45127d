import Foundation

/// What ``PreferenceGroup/migrate(from:)`` did.
///
/// ```swift
/// let report = try settings.migrate(from: ["name": "test_name", "age": "test_age"])
/// for property in report.leftInPlace { print(property, "keeps its default; the old value stayed") }
/// ```
public struct GroupMigrationReport: Sendable, Equatable {
    /// The properties whose old values were moved to their new keys.
    public let moved: [String]
    /// The properties whose old values did not fit their types: each old value was left under
    /// its old key, untouched (the diagnostics said which key and which value, one issue each).
    public let leftInPlace: [String]
    /// True when every entry of the mapping had run before, so this call did nothing.
    public let alreadyRan: Bool
}

extension PreferenceGroup {
    /// Moves values written the old way into the group's properties, each mapping entry once,
    /// type-checked.
    ///
    /// `mapping` maps a property's name to the raw key the value used to be stored under. Each old
    /// value whose type fits its property is copied to the property's key and the old key removed;
    /// a value whose type does not fit is left where it is, untouched, reported in the result and
    /// to the diagnostics. The store records each entry that ran (the group's class and key
    /// prefix, the property and the old key, under `prefs.migration:`), so an entry never runs
    /// twice and an entry a later release adds runs once. The records are the library's own:
    /// not among ``Preferences/storedKeys``, and ``Preferences/removeAll()`` keeps them. The
    /// whole call is one transaction (atomic across processes on a SQLite store).
    ///
    /// ```swift
    /// try settings.migrate(from: ["name": "test_name"])                    // this release
    /// try settings.migrate(from: ["name": "test_name", "age": "old_age"])  // the next: moves age
    /// ```
    ///
    /// A store migrated by Prefs 0.1 holds one marker for the whole group
    /// (`PrefsMigration.<class>.<key prefix>`), not one per entry: the first call that finds it
    /// counts every entry of the mapping it is given as run, records them, and removes the marker.
    ///
    /// A name in `mapping` that is not a `@Preference` property of the group throws
    /// ``PreferenceError/Kind-swift.struct/migrationFailed`` before anything changes.
    @discardableResult
    public func migrate(from mapping: [String: String]) throws -> GroupMigrationReport {
        var targets:
            [(property: String, oldKey: String, newKey: String, slot: PreferenceSlot, record: String)] = []
        let group = "\(type(of: self))" + (keyPrefix.isEmpty ? "" : "(keyPrefix: \(keyPrefix))")
        for (property, oldKey) in mapping.sorted(by: { $0.key < $1.key }) {
            guard let newKey = key(ofProperty: property), let slot = slot(forKey: newKey) else {
                throw PreferenceError(
                    .migrationFailed, "\(type(of: self)) has no @Preference property '\(property)'")
            }
            let record = ReservedKeys.migrationPrefix + "\(group).\(property) <- \(oldKey)"
            targets.append((property, oldKey, newKey, slot, record))
        }
        // What Prefs 0.1 recorded: that the group's migration ran, whatever its mapping.
        let formerMarker = "PrefsMigration.\(type(of: self)).\(keyPrefix)"
        let report = try preferences.store.transaction {
            transaction -> (
                report: GroupMigrationReport,
                mismatches: [(property: String, oldKey: String, found: PropertyListValue, why: String)]
            ) in
            if let former = transaction[formerMarker] {
                let ran: PropertyListValue = if case .date = former { former } else { .date(Date()) }
                for target in targets where transaction[target.record] == nil {
                    transaction[target.record] = ran
                }
                transaction[formerMarker] = nil
                return (GroupMigrationReport(moved: [], leftInPlace: [], alreadyRan: true), [])
            }
            var moved: [String] = []
            var mismatches: [(property: String, oldKey: String, found: PropertyListValue, why: String)] = []
            var ranNow = false
            for target in targets where transaction[target.record] == nil {
                ranNow = true
                transaction[target.record] = .date(Date())
                guard StoreKey(target.oldKey) != StoreKey(target.newKey), let old = transaction[target.oldKey]
                else { continue }
                switch target.slot.convert(old) {
                case .success(let converted):
                    // In the property's own form: an integer moved into a Double is a real.
                    transaction[target.newKey] = converted
                    transaction[target.oldKey] = nil
                    moved.append(target.property)
                case .failure(let refusal):
                    mismatches.append((target.property, target.oldKey, old, refusal.message))
                }
            }
            return (
                GroupMigrationReport(
                    moved: moved, leftInPlace: mismatches.map(\.property), alreadyRan: !ranNow),
                mismatches
            )
        }
        for mismatch in report.mismatches {
            preferences.diagnostics.report(
                PreferenceIssue(
                    key: mismatch.oldKey, store: preferences.store.description,
                    kind: .migrationLeftInPlace(
                        "\"\(mismatch.oldKey)\" holds \(mismatch.found), left in place: the property '\(mismatch.property)' cannot take it (\(mismatch.why))"
                    )))
        }
        return report.report
    }
}
