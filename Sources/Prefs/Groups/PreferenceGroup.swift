import Foundation
import Observation

/// A class whose properties are preferences, each property's name its key: the XBUserDefaults /
/// GVUserDefaults idea, with no `@dynamic` and no macro.
///
/// ```swift
/// final class Settings: PreferenceGroup {
///     @Preference var name = ""
///     @Preference var age = 0
///     @Preference("launch_count") var launches = 0   // an explicit key
/// }
/// let settings = Settings()           // or Settings(preferences: prefs, keyPrefix: "app.")
/// settings.name = "Xiaobing"          // stored under "name"
/// ```
///
/// The keys come from reflection once, when the group is created; after that a property access
/// costs a read or write of the preferences and nothing more. Two properties that map to the same
/// key stop the program at creation with a message naming both.
///
/// A group is `Observable`: `withObservationTracking` (and SwiftUI) see a property change, whether
/// it is made through the group or through any handle on the same store (or another process, for
/// stores that watch other processes). Changes made elsewhere are announced once the property has
/// been read through the group: on the main queue where SwiftUI exists (Apple platforms), on the
/// store's delivery queue elsewhere.
///
/// The keys come from reflection (`Mirror`): a program built with reflection metadata stripped
/// cannot use groups, and stops with a message saying so at the first property access.
///
/// Inside a group, `@Preference` is the group's own wrapper (its name is the key, with the
/// group's `keyPrefix`). A `@Pref` property is a member too: ``reset()`` and ``publish()``
/// include it, in the preferences it was given, under its key's own name (no prefix, as
/// `@Preference(.key)`).
///
/// Threads: a group is not `Sendable`, because a subclass may add state of its own; the compiler
/// refuses to hand one to another task. Its `@Preference` properties themselves may be read and
/// written from any thread (each access is a read or write of the preferences, which are
/// `Sendable`): hand the task the `Preferences` and read the keys there, or mark a subclass
/// whose own state is safe `@unchecked Sendable`.
open class PreferenceGroup: Observable {
    /// The preferences the properties are stored in.
    public let preferences: Preferences
    /// What goes before every property's key ("" for none).
    public let keyPrefix: String
    /// Each property's name and the key it is stored under (a subclass's properties first).
    package private(set) var propertyKeys: [(property: String, key: String)] = []

    let observationRegistrar = ObservationRegistrar()
    private var slotsByKey: [StoreKey: PreferenceSlot] = [:]
    /// The group's `@Pref` properties: members too (``reset()`` and ``publish()`` include them),
    /// each in its own preferences, under its key's own name.
    private var prefMembers: [any GroupMemberPref] = []
    private var storeObservation: StoreObservation?

    /// Creates the group over `preferences`, its keys prefixed with `keyPrefix`.
    ///
    /// ```swift
    /// let settings = Settings(preferences: Preferences(store: MemoryStore()), keyPrefix: "v2.")
    /// ```
    public required init(preferences: Preferences = .standard, keyPrefix: String = "") {
        self.preferences = preferences
        self.keyPrefix = keyPrefix
        bindProperties()
        tellOfAPrefixJoinedToAWord()
        let slots = slotsByKey
        storeObservation = preferences.observeStoreAndLayer(keys: propertyKeys.map(\.key)) { change in
            let changed = change.values.keys.compactMap { slots[$0] }
            guard !changed.isEmpty else { return }
            announceWhereRendered { for slot in changed { slot.announceChange() } }
        }
    }

    /// Returns every property of the group to its default, in one transaction.
    ///
    /// ```swift
    /// settings.reset()
    /// ```
    public func reset() {
        preferences.remove(propertyKeys.map(\.key))
        for slot in slotsByKey.values { slot.announceChange() }
        for member in prefMembers { member.resetInItsPreferences() }
    }

    /// The descriptions of the group's `@Pref` properties' keys, by the preferences they live in.
    var prefMemberDescriptions: [(preferences: Preferences, description: Preferences.KeyDescription)] {
        prefMembers.map { ($0.memberPreferences, $0.memberKeyDescription) }
    }

    /// The key of a property, by its name.
    func key(ofProperty property: String) -> String? {
        propertyKeys.first { $0.property == property }?.key
    }

    func slot(forKey key: String) -> PreferenceSlot? { slotsByKey[StoreKey(key)] }

    /// Finds the `@Preference` properties by reflection, subclasses first, and gives each its key.
    private func bindProperties() {
        var mirror: Mirror? = Mirror(reflecting: self)
        var found: [(name: String, key: String, preference: any BindablePreference)] = []
        while let current = mirror, current.subjectType != PreferenceGroup.self {
            for child in current.children {
                if let member = child.value as? any GroupMemberPref {
                    prefMembers.append(member)
                    continue
                }
                guard let label = child.label, let preference = child.value as? any BindablePreference else {
                    continue
                }
                // A property wrapper's storage is the property's name with a leading underscore.
                let name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                // A typed key is used as it is; other keys take the group's prefix.
                let key = preference.slot.typedKey?.name ?? keyPrefix + (preference.slot.explicitName ?? name)
                found.append((name, key, preference))
            }
            mirror = current.superclassMirror
        }
        var owners: [StoreKey: String] = [:]
        for entry in found {
            if let other = owners[StoreKey(entry.key)] {
                fatalError(
                    "\(type(of: self)): the properties '\(other)' and '\(entry.name)' are both stored under the key '\(entry.key)'; give one an explicit key with @Preference(\"…\")"
                )
            }
            owners[StoreKey(entry.key)] = entry.name
            entry.preference.bind(name: entry.key)
            slotsByKey[StoreKey(entry.key)] = entry.preference.slot
        }
        propertyKeys = found.map { ($0.name, $0.key) }
    }
}

/// A `@Preference` property seen through reflection, whose key can be bound without its type.
protocol BindablePreference {
    var slot: PreferenceSlot { get }
    func bind(name: String)
}

/// A `@Pref` property of a group: reset and published with the group, in its own preferences.
protocol GroupMemberPref {
    func resetInItsPreferences()
    var memberPreferences: Preferences { get }
    var memberKeyDescription: Preferences.KeyDescription { get }
}

extension Preference: BindablePreference {
    func bind(name: String) { slot.bind(name: name, as: Value.self) }
}

extension PreferenceGroup {
    /// Tells the diagnostics of a ``keyPrefix`` joined to a word, once per group class and prefix.
    ///
    /// A prefix that ends in a letter or digit is joined as given, so `"app"` stores `name` as `appname`, which is
    /// rarely meant (a namespace adds a dot; a group does not). Told, not changed: values
    /// stored so are still found where they are.
    fileprivate func tellOfAPrefixJoinedToAWord() {
        guard let last = keyPrefix.unicodeScalars.last,
            CharacterSet.alphanumerics.contains(last),
            let example = propertyKeys.first(where: { $0.key.hasPrefix(keyPrefix) }),
            KeyPrefixNotices.first("\(type(of: self))(keyPrefix: \(keyPrefix))")
        else { return }
        preferences.diagnostics.report(
            PreferenceIssue(
                key: example.key, store: preferences.store.description,
                kind: .storeNotice(
                    "the keyPrefix \"\(keyPrefix)\" of \(type(of: self)) is joined as given: '\(example.property)' is stored as \"\(example.key)\"; end it with a separator (\"\(keyPrefix).\") for \"\(keyPrefix).\(example.property)\" (a value already stored so stays where it is)"
                )))
    }
}
