import Foundation
import Observation

/// A property of a ``PreferenceGroup`` that is a preference: its key is the property's name (or
/// the name given), its default the initial value.
///
/// ```swift
/// final class Settings: PreferenceGroup {
///     @Preference var name = ""
///     @Preference("launch_count") var launches = 0
/// }
/// ```
///
/// Reads and writes go straight to the group's preferences; the key is resolved once, when the
/// group is created.
@propertyWrapper
public struct Preference<Value: PreferenceValue>: Sendable {
    let slot: PreferenceSlot

    /// A preference keyed by the property's name.
    ///
    /// ```swift
    /// final class Settings: PreferenceGroup {
    ///     @Preference var volume = 0.5
    /// }
    /// ```
    public init(wrappedValue defaultValue: Value) {
        slot = PreferenceSlot(explicitName: nil, defaultValue: defaultValue)
    }

    /// A preference with an explicit key.
    ///
    /// ```swift
    /// final class Settings: PreferenceGroup {
    ///     @Preference("launch_count") var launches = 0
    /// }
    /// ```
    public init(wrappedValue defaultValue: Value, _ key: String) {
        // fatalError, not precondition: its message survives optimised builds.
        if key.isEmpty { fatalError("@Preference: an explicit key must not be empty") }
        slot = PreferenceSlot(explicitName: key, defaultValue: defaultValue)
    }

    /// A preference for a typed key: stored under the key's own name (the group's `keyPrefix`
    /// does not apply), with the key's default, so it is the same preference as `prefs[key]`.
    ///
    /// ```swift
    /// extension Preferences.Keys { static let volume = Key<Double>("volume", default: 0.5) }
    /// final class Settings: PreferenceGroup {
    ///     @Preference(.volume) var volume
    /// }
    /// ```
    public init(_ key: Preferences.Key<Value>) {
        slot = PreferenceSlot(explicitName: key.name, defaultValue: key.defaultValue, typedKey: key)
    }

    /// An optional preference, `nil` by default, keyed by the property's name.
    ///
    /// ```swift
    /// final class Settings: PreferenceGroup {
    ///     @Preference var nickname: String?
    /// }
    /// ```
    public init<Wrapped>() where Value == Wrapped? {
        slot = PreferenceSlot(explicitName: nil, defaultValue: Value?.none as Any)
    }

    /// Only available inside a ``PreferenceGroup`` subclass.
    @available(*, unavailable, message: "@Preference is only available on properties of a PreferenceGroup")
    public var wrappedValue: Value {
        get { fatalError("@Preference is only available on properties of a PreferenceGroup") }
        // swift-format-ignore: NoSetterWithoutGetter
        set { fatalError("@Preference is only available on properties of a PreferenceGroup") }
    }

    /// Reads and writes the value through the enclosing group's preferences, with observation.
    public static subscript<Group: PreferenceGroup>(
        _enclosingInstance group: Group,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Group, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Group, Preference<Value>>
    ) -> Value {
        get {
            let slot = group[keyPath: storageKeyPath].slot
            slot.rememberKeyPath(wrappedKeyPath, of: group)
            group.observationRegistrar.access(group, keyPath: wrappedKeyPath)
            return group.preferences[slot.key(Value.self)]
        }
        set {
            let slot = group[keyPath: storageKeyPath].slot
            slot.rememberKeyPath(wrappedKeyPath, of: group)
            group.observationRegistrar.withMutation(of: group, keyPath: wrappedKeyPath) {
                group.preferences[slot.key(Value.self)] = newValue
            }
        }
    }
}

/// What a `@Preference` property knows about itself, shared by every copy of the wrapper: its key
/// (resolved once, when the group is created) and how to tell observers it changed.
final class PreferenceSlot: @unchecked Sendable {
    let explicitName: String?
    let defaultValue: Any
    /// The typed key given with `@Preference(.key)`, used as it is.
    let typedKey: Preferences.Keys?
    // Set once in `PreferenceGroup.init` (before the group is used), then only read.
    private(set) var key: Preferences.Keys?
    // Set at the first access through the property; guarded by `lock`.
    private var notifyChange: (@Sendable () -> Void)?
    private let lock = NSLock()

    init(explicitName: String?, defaultValue: Any, typedKey: Preferences.Keys? = nil) {
        self.explicitName = explicitName
        self.defaultValue = defaultValue
        self.typedKey = typedKey
    }

    // Set with `key`: a stored value read as the property's key reads it, and stored again in
    // the key's own form (for migrations); or why it cannot be.
    private(set) var convert: @Sendable (PropertyListValue) -> Result<PropertyListValue?, PreferenceError> = {
        _ in .failure(PreferenceError(.unreadable, "the property has no key"))
    }

    func bind<Value: PreferenceValue>(name: String, as type: Value.Type) {
        key = typedKey ?? Preferences.Key<Value>(name, default: defaultValue as! Value)
        // In the key's own form (a typed key may read JSON text, or like UserDefaults).
        let typed = key as? Preferences.Key<Value>
        convert = { stored in
            do {
                guard let typed else { return .success(try Value.serialize(Value.deserialize(stored))) }
                return .success(try typed.encode(typed.decode(stored)))
            } catch {
                return .failure(
                    error as? PreferenceError
                        ?? .typeMismatch(expected: swiftSpelling(of: Value.self), found: stored))
            }
        }
    }

    func key<Value: PreferenceValue>(_ type: Value.Type) -> Preferences.Key<Value> {
        // Bound in `PreferenceGroup.init` for every @Preference property that reflection finds.
        guard let key = key as? Preferences.Key<Value> else {
            fatalError(
                """
                Prefs: a @Preference property of a PreferenceGroup has no key: reflection did not \
                find the group's properties when it was created. Is the program built with \
                reflection metadata stripped (-disable-reflection-metadata, or Xcode's \
                SWIFT_REFLECTION_METADATA_LEVEL = none)? PreferenceGroup needs it; give the \
                property an explicit key and build with reflection metadata, or use typed keys.
                """)
        }
        return key
    }

    /// Remembers how to announce a change of this property to observers, when another handle or
    /// process changes its key.
    func rememberKeyPath<Group: PreferenceGroup, Value>(
        _ keyPath: ReferenceWritableKeyPath<Group, Value>, of group: Group
    ) {
        lock.withLock {
            guard notifyChange == nil else { return }
            let target = WeakGroup(group)
            nonisolated(unsafe) let keyPath = keyPath
            notifyChange = {
                guard let group = target.group as? Group else { return }
                group.observationRegistrar.withMutation(of: group, keyPath: keyPath) {}
            }
        }
    }

    func announceChange() {
        lock.withLock { notifyChange }?()
    }
}

/// A weak reference that can cross threads: the group itself is only used through its thread-safe
/// registrar and preferences.
struct WeakGroup: @unchecked Sendable {
    weak var group: PreferenceGroup?
    init(_ group: PreferenceGroup) { self.group = group }
}
