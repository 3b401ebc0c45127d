/// The namespace of typed keys. Declare keys as static members in an extension, and use them
/// with a leading dot wherever a key is expected.
///
/// ```swift
/// extension Preferences.Keys {
///     static let volume = Key<Double>("volume", default: 0.5)
///     static let username = Key<String?>("username")
/// }
/// prefs[.volume] = 0.8
/// ```
extension Preferences {
    /// The place where keys are declared as static members: ``AnyKey`` by the name that reads
    /// well in a declaration.
    ///
    /// ```swift
    /// extension Preferences.Keys { static let launches = Key<Int>("launches", default: 0) }
    /// ```
    public typealias Keys = AnyKey

    /// A key of any value type: the base of every ``Key``, and (as ``Keys``) where keys are
    /// declared as static members.
    ///
    /// `Key<Value>` inherits from `AnyKey`, so `.volume` resolves wherever a `Key<Double>` is
    /// expected, and keys of different types fit in one list (`reset(.volume, .theme)`). Only the
    /// library creates subclasses.
    ///
    /// ```swift
    /// let keys: [Preferences.AnyKey] = [Preferences.Keys.volume, .theme]
    /// ```
    ///
    /// (`@unchecked` because a non-final class cannot be checked: every stored property is a
    /// `let` of a `Sendable` type, and the initializer is not public, so no subclass adds state.)
    public class AnyKey: @unchecked Sendable {
        /// The name the value is stored under.
        public let name: String

        /// `Key<Value>` by its short name inside `extension Preferences.Keys { … }`.
        ///
        /// ```swift
        /// extension Preferences.Keys { static let volume = Key<Double>("volume", default: 0.5) }
        /// ```
        public typealias Key<Value: PreferenceValue> = Preferences.Key<Value>

        /// One line saying what the key is for, when it says (published with its description).
        public let help: String?
        /// Whether no other spelling of the name is canonically equivalent to it (so a store that
        /// compares names as Foundation does finds exactly this key); decided once, for reads.
        @usableFromInline let hasOneSpelling: Bool
        /// Whether the name is one a ``SyncedStore`` keeps for its own records (such a key reads
        /// as nothing through it); decided once, for reads.
        @usableFromInline let namesSyncRecord: Bool
        /// Whether the value lives in the handle's secret store (``Preferences/StoredForm/secret``).
        @usableFromInline let isSecret: Bool

        /// The name observers watch in the store: the key's own, or a secret's stamp (made once:
        /// every read of a secret reads its stamp).
        let watchedName: String

        init(validatedName name: String, help: String?, isSecret: Bool = false) {
            // fatalError, not precondition: its message survives optimised builds.
            if name.isEmpty {
                fatalError("Preferences.Key: the name must not be empty; give every key a non-empty name")
            }
            self.name = name
            self.help = help
            hasOneSpelling = !UserDefaultsStore.mayHaveAnotherSpelling(name)
            namesSyncRecord = SyncedStore.isReserved(name)
            self.isSecret = isSecret
            watchedName = isSecret ? Preferences.secretStampName(name) : name
        }

        /// What the program declares about this key, as tools read it (``Preferences/publish(_:)``).
        ///
        /// ```swift
        /// Preferences.Keys.volume.keyDescription.type  // "-float"
        /// ```
        public var keyDescription: Preferences.KeyDescription {
            Preferences.KeyDescription(name: name, type: "", swiftType: "", defaultValue: nil, help: help)
        }

        /// The key's default in its stored form (`nil` for an optional key's `nil`, or a default
        /// that cannot be encoded).
        var encodedDefault: PropertyListValue? { nil }

        /// What a strict read of this key in `preferences` throws (``Preferences/value(for:)``),
        /// or `nil` when it reads; overridden by `Key`, which knows the type.
        func readingProblem(in preferences: Preferences) -> PreferenceError? { nil }
    }

    /// A typed key: the name a value is stored under and the default shown when nothing is stored.
    ///
    /// ```swift
    /// enum Theme: String, PreferenceValue { case system, light, dark }
    /// extension Preferences.Keys {
    ///     static let theme = Key<Theme>("theme", default: .system)
    ///     static let recent = Key<[URL]>("recentFiles", default: [])
    /// }
    /// ```
    public final class Key<Value: PreferenceValue>: AnyKey, @unchecked Sendable {
        /// Where the default comes from.
        ///
        /// Seen by callers (`@usableFromInline`), so that ``defaultValue`` is specialized for the
        /// key's type where it is read: unspecialized, switching over this generic enum looked
        /// up its metadata on every read of a key with nothing stored (four fifths of such a read).
        @usableFromInline enum Default {
            case value(Value)
            case computed(@Sendable () -> Value)
        }
        @usableFromInline let defaultSource: Default
        /// How the stored form differs from the type's own (``Preferences/StoredForm``,
        /// ``Preferences/ReadingRule``); `nil` for the type's own form, read strictly.
        @usableFromInline let coding: KeyCoding<Value>?
        /// The values the key accepts, when it declares them.
        @usableFromInline let allowed: KeyAllowed<Value>?
        /// Neither a coding nor allowed values: a read is the type's own decoding alone, without
        /// copying the two optionals out of the key (a tenth of a short string's read).
        @usableFromInline let isPlain: Bool
        /// Whether a read may find the value as JSON older code stored (a string or data holding
        /// it, for a `Codable` value stored as a dictionary or an array), which it reads and
        /// reports; decided once, so other reads pay one test.
        @usableFromInline let readsOlderJSON: Bool

        /// The value a read gives when nothing (or nothing usable) is stored; for a key with a
        /// computed default, computed now.
        @inlinable
        public var defaultValue: Value {
            switch defaultSource {
            case .value(let value): value
            case .computed(let make): make()
            }
        }

        /// Creates a key with a name and the value a read gives when nothing is stored.
        ///
        /// Every option goes with every other, and with the other two forms (a computed default,
        /// an optional key): `help` says what the key is for (tools such as `prefs describe`
        /// show it), `allowed` limits the values it takes, `storedAs` keeps the form older code
        /// wrote, and `reading` reads what `UserDefaults` would. An empty name is a programming
        /// error.
        ///
        /// ```swift
        /// let volume = Preferences.Key<Double>("volume", default: 0.5, help: "Playback volume", allowed: .range(0...1))
        /// let theme = Preferences.Key<String>("theme", default: "light", reading: .likeUserDefaults)
        /// ```
        public convenience init(
            _ name: String, default defaultValue: Value, help: String? = nil,
            allowed: Preferences.Allowed<Value>? = nil,
            storedAs form: Preferences.StoredForm<Value> = .propertyList,
            reading rule: Preferences.ReadingRule<Value> = .strict
        ) {
            self.init(
                name, defaultSource: .value(defaultValue),
                coding: KeyCoding.combining(form.coding, rule.coding),
                help: help, allowed: allowed?.check, isSecret: form.isSecret)
        }

        /// Creates a key whose default is computed each time it is needed (when nothing usable is
        /// stored), with the same options as ``init(_:default:help:allowed:storedAs:reading:)-(_,Value,_,_,_,_)``.
        ///
        /// ```swift
        /// let firstLaunch = Preferences.Key<Date>("firstLaunch", default: { .now }, help: "When the app first ran")
        /// ```
        public convenience init(
            _ name: String, default makeDefault: @escaping @Sendable () -> Value, help: String? = nil,
            allowed: Preferences.Allowed<Value>? = nil,
            storedAs form: Preferences.StoredForm<Value> = .propertyList,
            reading rule: Preferences.ReadingRule<Value> = .strict
        ) {
            self.init(
                name, defaultSource: .computed(makeDefault),
                coding: KeyCoding.combining(form.coding, rule.coding),
                help: help, allowed: allowed?.check, isSecret: form.isSecret)
        }

        /// Creates a key for an optional value, whose default is `nil`, with the same options as
        /// ``init(_:default:help:allowed:storedAs:reading:)-(_,Value,_,_,_,_)``.
        ///
        /// ```swift
        /// let username = Preferences.Key<String?>("username", help: "Who signed in last")
        /// let endpoint = Preferences.Key<URL?>("endpoint", help: "The server", reading: .likeUserDefaults)
        /// ```
        public convenience init<Wrapped>(
            _ name: String, help: String? = nil, allowed: Preferences.Allowed<Value>? = nil,
            storedAs form: Preferences.StoredForm<Value> = .propertyList,
            reading rule: Preferences.ReadingRule<Value> = .strict
        ) where Value == Wrapped? {
            self.init(
                name, defaultSource: .value(nil), coding: KeyCoding.combining(form.coding, rule.coding),
                help: help, allowed: allowed?.check, isSecret: form.isSecret)
        }

        /// A key whose stored form differs from its type's own, or that declares which values it
        /// accepts (the library's own keys, and the public initializers above).
        init(
            _ name: String, defaultSource: Default, coding: KeyCoding<Value>?, help: String? = nil,
            allowed: KeyAllowed<Value>? = nil, isSecret: Bool = false
        ) {
            self.defaultSource = defaultSource
            self.coding = coding
            self.allowed = allowed
            isPlain = coding == nil && allowed == nil
            // A key with a stored form of its own reads JSON as that form says, unreported.
            readsOlderJSON = coding == nil && Self.mayReadOlderJSON
            super.init(validatedName: name, help: help, isSecret: isSecret)
        }

        /// The same with a default value.
        convenience init(
            _ name: String, default defaultValue: Value, coding: KeyCoding<Value>?, help: String? = nil,
            allowed: KeyAllowed<Value>? = nil
        ) {
            self.init(name, defaultSource: .value(defaultValue), coding: coding, help: help, allowed: allowed)
        }

        /// Whether the value type is `Decodable` and stored as neither a string nor data (nor
        /// another scalar), so a string or data read as it held JSON of it.
        private static var mayReadOlderJSON: Bool {
            guard Value.self is any Decodable.Type else { return false }
            return ["", "-array", "-dict"].contains(storedTypeFlag(of: Value.self))
        }

        override var encodedDefault: PropertyListValue? {
            (try? encode(defaultValue)) ?? nil
        }

        /// What the program declares about this key: its type, default, help and allowed values.
        public override var keyDescription: Preferences.KeyDescription { describe() }

        /// The value in its stored form: the key's own form where it has one, else its type's.
        func encode(_ value: Value) throws -> PropertyListValue? {
            if let allowed, !allowed.accepts(value) { throw allowed.refusal(of: value) }
            if let write = coding?.write { return try write(value) }
            return try Value.serialize(value)
        }

        override func readingProblem(in preferences: Preferences) -> PreferenceError? {
            do {
                _ = try preferences.value(for: self)
                return nil
            } catch {
                return error as? PreferenceError ?? PreferenceError(.unreadable, "\(error)")
            }
        }

        /// The value a stored one holds for this key, read in the key's form (and one of the
        /// values it accepts, when it declares them).
        @inlinable
        func decode(_ stored: PropertyListValue) throws -> Value {
            if isPlain { return try Value.deserialize(stored) }
            let value = try coding.map { try $0.read(stored) } ?? Value.deserialize(stored)
            if let allowed, !allowed.accepts(value) { throw allowed.refusal(of: value) }
            return value
        }
    }
}

extension Preferences.AnyKey: CustomStringConvertible {
    /// The key's name, for messages.
    ///
    /// ```swift
    /// print(Preferences.Keys.volume)  // volume
    /// ```
    public var description: String { name }
}

extension Preferences.AnyKey: Hashable {
    /// Keys are equal when their names are, scalar for scalar (whatever their value types).
    ///
    /// ```swift
    /// Preferences.Keys.volume == Preferences.Key<Double>("volume", default: 0)  // true
    /// ```
    public static func == (lhs: Preferences.AnyKey, rhs: Preferences.AnyKey) -> Bool {
        StoreKey(lhs.name) == StoreKey(rhs.name)
    }

    /// Hashes the name's scalars.
    ///
    /// ```swift
    /// let seen: Set<Preferences.Keys> = [.volume, .theme]
    /// ```
    public func hash(into hasher: inout Hasher) {
        hasher.combine(StoreKey(name))
    }
}
