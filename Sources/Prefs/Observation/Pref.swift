import Foundation
import Observation
import PrefsSupport

#if canImport(SwiftUI)
    import SwiftUI
#endif

/// A preference as a property, for SwiftUI views, models and anything else: reads and writes go
/// to a typed key, and reading it where Observation tracks (a SwiftUI `body`,
/// `withObservationTracking`) tracks it.
///
/// <!-- swift: not compiled (SwiftUI, Apple platforms only) -->
/// ```swift
/// struct VolumeView: View {
///     @Pref(.volume) var volume              // Preferences.standard
///     var body: some View { Slider(value: $volume) }
/// }
/// @Observable final class PlayerModel {
///     @ObservationIgnored @Pref(.volume, in: prefs) var volume
/// }
/// ```
///
/// A change from this property, another handle on the store, another process (SQLite) or another
/// machine (PostgreSQL) announces one change to whoever read the property; on Apple platforms the
/// announcement is made on the main queue, as SwiftUI expects. Every `@Pref` of one key on one
/// store in the process shares one observation of the store, however many views are created.
@propertyWrapper
public struct Pref<Value: PreferenceValue>: Sendable {
    private let source: PrefSource<Value>

    /// A property for `key` in `preferences`.
    ///
    /// ```swift
    /// @Pref(.volume, in: Preferences(store: try SQLiteStore(path: path))) var volume
    /// ```
    public init(_ key: Preferences.Key<Value>, in preferences: Preferences = .standard) {
        source = PrefSource.shared(for: key, in: preferences)
    }

    /// The key's value (its default when nothing usable is stored); setting it stores it, and a
    /// failed write is reported to the preferences' diagnostics.
    ///
    /// ```swift
    /// @Pref(.volume) var volume
    /// volume = 0.8
    /// ```
    public var wrappedValue: Value {
        get { source.value }
        nonmutating set { source.value = newValue }
    }

    #if canImport(SwiftUI)
        /// A binding to the preference, for controls.
        ///
        /// <!-- swift: not compiled (SwiftUI, Apple platforms only) -->
        /// ```swift
        /// Slider(value: $volume)
        /// ```
        public var projectedValue: Binding<Value> {
            let source = source
            return Binding(get: { source.value }, set: { source.value = $0 })
        }
    #else
        /// The property itself (a `Binding` where SwiftUI exists).
        ///
        /// ```swift
        /// @Pref(.volume) var volume
        /// let pref = $volume
        /// ```
        public var projectedValue: Pref<Value> { self }
    #endif
}

#if canImport(SwiftUI)
    extension Pref: DynamicProperty {}
#endif

/// One key of one store, observable, shared by every `@Pref` of that key and store.
final class PrefSource<Value: PreferenceValue>: Observable, @unchecked Sendable {
    let key: Preferences.Key<Value>
    let preferences: Preferences
    private let registrar = ObservationRegistrar()
    // Set once, at the end of `init`; cancelled in `deinit`.
    private var observation: StoreObservation?

    var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            return preferences[key]
        }
        set { preferences[key] = newValue }
    }

    private init(key: Preferences.Key<Value>, preferences: Preferences) {
        self.key = key
        self.preferences = preferences
        let name = StoreKey(key.watchedName)
        observation = preferences.observeStoreAndLayer(keys: [key.watchedName]) { [weak self] change in
            guard change.values[name] != nil, let self else { return }
            announceWhereRendered { self.announceChange() }
        }
    }

    deinit { observation?.cancel() }

    private func announceChange() {
        registrar.withMutation(of: self, keyPath: \.value) {}
    }

    // MARK: - One source per key and store

    /// The source of `key` in `preferences`, made if none is alive.
    ///
    /// Sources are found by key object and store object; a source holds both, so while it lives
    /// their identifiers cannot be reused by other objects.
    static func shared(for key: Preferences.Key<Value>, in preferences: Preferences) -> PrefSource {
        let identity = PrefSourceIdentity(
            key: ObjectIdentifier(key), store: ObjectIdentifier(preferences.store))
        return livePrefSources.withLock { sources in
            if let alive = sources[identity]?.source as? PrefSource { return alive }
            sources = sources.filter { $0.value.source != nil }
            let made = PrefSource(key: key, preferences: preferences)
            sources[identity] = WeakPrefSource(made)
            return made
        }
    }
}

private struct PrefSourceIdentity: Hashable {
    let key: ObjectIdentifier
    let store: ObjectIdentifier
}

private final class WeakPrefSource: @unchecked Sendable {
    // Written once at creation; read under `livePrefSources`' lock.
    weak var source: AnyObject?
    init(_ source: AnyObject) { self.source = source }
}

/// The `PrefSource`s alive in the process (a generic type cannot have a stored static property).
private let livePrefSources = Locked<[PrefSourceIdentity: WeakPrefSource]>([:])

extension Pref: GroupMemberPref {
    func resetInItsPreferences() { source.preferences.reset(source.key) }
    var memberPreferences: Preferences { source.preferences }
    var memberKeyDescription: Preferences.KeyDescription { source.key.keyDescription }
}
