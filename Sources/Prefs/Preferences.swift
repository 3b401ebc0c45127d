import Foundation

/// Typed access to a store of preferences: the handle every feature goes through.
///
/// ```swift
/// extension Preferences.Keys {
///     static let volume = Key<Double>("volume", default: 0.5)
/// }
/// let prefs = Preferences.standard
/// prefs[.volume] = 0.8
/// prefs.reset(.volume)          // back to 0.5
/// prefs.hasValue(for: .volume)  // false
/// ```
///
/// Reads never throw or crash: a missing value gives the key's default, and a stored value of
/// another type (or one that cannot be decoded) gives the default too and is reported to
/// ``diagnostics``. Writes that can fail throw from ``set(_:for:)`` and ``update(_:)``; the
/// subscript setter reports a failure to ``diagnostics`` and leaves the stored value as it was.
public struct Preferences: Sendable {
    /// The store values are read from and written to.
    public let store: any PreferenceStore
    /// Where read fallbacks and failed non-throwing writes are reported.
    public let diagnostics: PreferenceDiagnostics
    /// An administrator's defaults and locked values under the store, when there are any.
    @usableFromInline package let system: SystemLayer?
    /// The store when it answers a typed read in its own words (``typedValue(of:)``); `nil`
    /// for any other store.
    @usableFromInline let typedReadStore: (any TypedReadStore)?
    /// Whether names of a ``SyncedStore``'s own records read as nothing here (its typed reads go
    /// to its local store, which holds them).
    @usableFromInline let hidesSyncRecords: Bool
    /// Whether the store refuses a value nested too deeply itself (every store of Prefs' own
    /// does, as it writes): the handle then leaves the check to it, so a write checks once.
    let storeChecksNesting: Bool
    /// Where secret keys' values live (``StoredForm/secret``).
    let secrets: SecretStore
    /// The service (domain) this handle's secrets are kept under.
    let secretService: String

    /// Creates a handle on `store`.
    ///
    /// Under an administrator's layer when `system` is given: its locked values win over what is
    /// stored, and its defaults over the keys' own. Secret keys (``StoredForm/secret``) keep
    /// their values in `secrets`.
    ///
    /// ```swift
    /// let prefs = Preferences(store: MemoryStore())
    /// let managed = Preferences(store: MemoryStore(), system: SystemLayer(domain: "com.example.app"))
    /// let tested = Preferences(store: MemoryStore(), secrets: .memory())
    /// ```
    public init(
        store: any PreferenceStore, diagnostics: PreferenceDiagnostics = .shared,
        system: SystemLayer? = nil, secrets: SecretStore = .system()
    ) {
        self.store = store
        let typedReads = store as? any TypedReadStore
        typedReadStore = typedReads?.typedReadsAnsweredBy ?? typedReads
        hidesSyncRecords = store is SyncedStore
        storeChecksNesting = store is any PrefsOwnStore
        self.diagnostics = diagnostics
        self.system = system
        self.secrets = secrets
        secretService = Self.secretService(secrets, for: store)
        if let notice = secrets.notice {
            diagnostics.report(
                PreferenceIssue(key: "", store: secrets.backend.name, kind: .storeNotice(notice)))
        }
        if let problem = system?.problem {
            diagnostics.report(
                PreferenceIssue(key: "", store: store.description, kind: .storeNotice(problem)))
        }
    }

    /// The value stored for `key`, or its default; assigning stores it (`nil` removes it).
    ///
    /// ```swift
    /// prefs[.volume] = 0.8
    /// let volume = prefs[.volume]
    /// ```
    @inlinable
    public subscript<Value>(key: Key<Value>) -> Value {
        get {
            if key.isSecret { return secretValue(of: key) }
            guard let system else { return typedValue(of: key) }
            return layered(key, system, stored: store.value(forKey: key.name))
        }
        nonmutating set {
            do {
                try set(newValue, for: key)
            } catch {
                report(error, key: key.name)
            }
        }
    }

    /// Stores `value` for `key` (`nil` removes it), throwing when it cannot be encoded or the
    /// store cannot write; the stored value is then as it was.
    ///
    /// A value that cannot be stored throws ``PreferenceError``; a store that cannot write
    /// throws its own error, a ``StoreError`` for Prefs' stores, naming the key in its `keys`.
    ///
    /// ```swift
    /// do {
    ///     try prefs.set(0.8, for: .volume)
    /// } catch let error as StoreError where error.kind == .busy {
    ///     print("try again later: \(error)")
    /// }
    /// ```
    public func set<Value>(_ value: Value, for key: Key<Value>) throws {
        if key.isSecret { return try setSecret(value, for: key) }
        try checkNotLocked(key)
        let encoded = try encode(value, for: key)
        do {
            try store.setValue(encoded, forKey: key.name)
        } catch {
            throw failure(error, writing: [key.name])
        }
    }

    /// Removes the stored values of one or several keys, so their defaults show through.
    ///
    /// ```swift
    /// prefs.reset(.volume)
    /// prefs.reset(.volume, .username)
    /// ```
    ///
    /// Every key at once is ``removeAll()``.
    public func reset(_ first: Keys, _ more: Keys...) {
        reset([first] + more)
    }

    /// The same for a list of keys (an empty list removes nothing).
    ///
    /// ```swift
    /// let keys: [Preferences.Keys] = [.volume, .username]
    /// prefs.reset(keys)
    /// ```
    public func reset(_ keys: [Keys]) {
        let plain = keys.filter { !$0.isSecret }
        resetSecrets(keys.filter(\.isSecret).map(\.name))
        guard !plain.isEmpty else { return }
        remove(plain.map(\.name))
    }

    /// Removes every value in the store.
    ///
    /// ```swift
    /// prefs.removeAll()
    /// ```
    ///
    /// The library's own records stay (which migrations ran, a synced store's records of
    /// syncing): a migration that ran does not run again after it.
    public func removeAll() {
        remove(nil)
    }

    /// Whether a value is stored for `key` (whether or not it fits the key's type).
    ///
    /// ```swift
    /// prefs.hasValue(for: .volume)  // false until something is stored
    /// ```
    public func hasValue(for key: Keys) -> Bool {
        if key.isSecret { return hasSecret(key.name) }
        // Not what a store merely has registered (`UserDefaults`' defaults): only what is stored.
        return store.storedValue(forKey: key.name) != nil
    }

    /// The names of every stored key, sorted by Unicode scalars (not the library's own records,
    /// such as which migrations ran).
    ///
    /// ```swift
    /// prefs.storedKeys  // ["username", "volume"]
    /// ```
    public var storedKeys: [String] {
        store.allKeys().filter { !ReservedKeys.contains($0) }.sortedByScalars()
    }

    /// Every stored key and its value, at one moment (not the library's own records, such as
    /// which migrations ran).
    ///
    /// ```swift
    /// prefs.dictionaryRepresentation()["volume"]  // .double(0.8)
    /// ```
    public func dictionaryRepresentation() -> [StoreKey: PropertyListValue] {
        ReservedKeys.withoutRecords(store.snapshot())
    }

    /// Whether an administrator locked the key (``SystemLayer``): reads give the locked value,
    /// and writes throw.
    ///
    /// ```swift
    /// if prefs.isLocked(.theme) { print("set by your administrator") }
    /// ```
    public func isLocked(_ key: Keys) -> Bool {
        system?.lockedValue(forKey: key.name) != nil
    }

    // MARK: - Coding, shared with `update`

    /// The key's value under an administrator's layer: locked, else stored, else the system's
    /// default, else the key's own.
    @usableFromInline
    func layered<Value>(_ key: Key<Value>, _ system: SystemLayer, stored: PropertyListValue?) -> Value {
        if let locked = system.lockedValue(forKey: key.name) { return decode(locked, for: key) }
        if let stored { return decode(stored, for: key) }
        if let fallback = system.defaultValue(forKey: key.name) { return decode(fallback, for: key) }
        return key.defaultValue
    }

    /// Throws when an administrator locked the key.
    func checkNotLocked(_ key: Keys) throws {
        guard isLocked(key) else { return }
        throw PreferenceError(
            .locked, "an administrator locked it (\(system?.path ?? "managed preferences"))"
        )
        .naming(key: key.name, store: store.description)
    }

    /// The stored value as the key's type, or its default.
    ///
    /// Inlinable, so a read specializes for its type in the caller (the read path of a store is
    /// a few nanoseconds; a generic call through witness tables would be as long again).
    @inlinable
    func decode<Value>(_ stored: PropertyListValue?, for key: Key<Value>) -> Value {
        guard let stored else { return key.defaultValue }
        do {
            let value = try key.decode(stored)
            if key.readsOlderJSON { noteOlderJSON(stored, for: key) }
            return value
        } catch {
            return fellBack(stored, for: key, because: error)
        }
    }

    /// Reports a value read from JSON older code stored (a string or data holding it, where the
    /// key's own form is a dictionary or an array): read, not silent, and once with the standard
    /// diagnostics; the next write stores the key's own form.
    @usableFromInline
    func noteOlderJSON<Value>(_ stored: PropertyListValue, for key: Key<Value>) {
        let form: String
        switch stored {
        case .string: form = "JSON text"
        case .data: form = "JSON data"
        default: return
        }
        // Not when the type's own form is that string (a `Codable` type encoding a single value).
        if let decodable = Value.self as? any Decodable.Type, decodesAsPropertyList(decodable, stored) {
            return
        }
        let own = key.encodedDefault.map { " (\($0.typeName))" } ?? ""
        diagnostics.report(
            PreferenceIssue(
                key: key.name, store: store.description,
                kind: .storeNotice(
                    "\"\(key.name)\" read as \(Value.self) from \(form), the form code before Prefs stored; "
                        + "the next write stores its own form\(own)")))
    }

    /// Reports a stored value the key's type cannot read and gives the default.
    @usableFromInline
    func fellBack<Value>(_ stored: PropertyListValue, for key: Key<Value>, because error: any Error) -> Value
    {
        let cause =
            error as? PreferenceError ?? .typeMismatch(expected: swiftSpelling(of: Value.self), found: stored)
        var issue = PreferenceIssue(
            key: key.name, store: store.description, kind: .readFellBackToDefault(cause))
        issue.defaultIsNil = key.encodedDefault == nil && Value.self is any ExpressibleByNilLiteral.Type
        diagnostics.report(issue)
        return key.defaultValue
    }

    func encode<Value>(_ value: Value, for key: Key<Value>) throws -> PropertyListValue? {
        do {
            let encoded = try key.encode(value)
            if !storeChecksNesting { try encoded?.checkNesting() }
            return encoded
        } catch let error as PreferenceError {
            throw error.naming(key: key.name, store: store.description)
        } catch {
            throw PreferenceError.notRepresentable(type: swiftSpelling(of: Value.self), reason: "\(error)")
                .naming(key: key.name, store: store.description)
        }
    }

    /// A write's failure as the error `set` and `update` throw, caught as the docs show: a
    /// value's own ``PreferenceError`` (a store that checks nesting as it writes throws one)
    /// naming the keys and the store, or the store's own error as it threw it, a ``StoreError``
    /// naming the keys when it named none.
    func failure(_ error: any Error, writing keys: [String]) -> any Error {
        let names = keys.joined(separator: ", ")
        switch error {
        case let error as PreferenceError:
            return error.key == nil && !keys.isEmpty
                ? error.naming(key: names, store: store.description) : error
        case let error as StoreError where error.keys.isEmpty && !keys.isEmpty:
            return StoreError(
                kind: error.kind, store: error.storeDescription, message: error.message, keys: keys)
        default:
            return error
        }
    }

    @usableFromInline
    func report(_ error: any Error, key: String) {
        let failure = failure(error, writing: key.isEmpty ? [] : [key])
        diagnostics.report(PreferenceIssue(key: key, store: store.description, kind: .writeLost(failure)))
    }

    /// Removes the named keys, or every key but the library's records when `names` is nil, in one
    /// transaction; a failure is reported to the diagnostics.
    func remove(_ names: [String]?) {
        do {
            try store.transaction { transaction in
                for name in names ?? transaction.keys.filter({ !ReservedKeys.contains($0) }) {
                    transaction[name] = nil
                }
            }
        } catch {
            report(error, key: names?.joined(separator: ", ") ?? "*")
        }
    }
}

/// Whether `stored` is the property-list form of `type` (what Prefs itself writes).
private func decodesAsPropertyList<Value: Decodable>(_ type: Value.Type, _ stored: PropertyListValue) -> Bool
{
    (try? PropertyListValueDecoder().decode(type, from: stored)) != nil
}
