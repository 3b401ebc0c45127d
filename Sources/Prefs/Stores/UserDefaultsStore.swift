import Foundation
import PrefsEngine
import PrefsSupport

/// A store backed by Foundation's `UserDefaults`: plist-typed values are stored as plain plist
/// values, so programs that use `UserDefaults` directly read them, and the other way round.
///
/// ```swift
/// let prefs = Preferences(store: try UserDefaultsStore(suiteName: "group.example"))
/// prefs[.volume] = 0.8  // `UserDefaults(suiteName: "group.example")?.double(forKey: "volume")` is 0.8
/// ```
///
/// On Linux every write is made durable before it returns (Foundation there writes only on
/// `synchronize()`), so it lasts past the process's exit. Two limits of Foundation on Linux
/// remain. Its XML plist keeps dates to whole seconds, and it reloads that file at moments of its
/// own choosing; so that a date reads back the same at every moment, this store drops the
/// fractional seconds of every date it writes on Linux. And processes that share a suite can
/// overwrite each other's writes. Where either matters, use another store.
///
/// **Keys.** Foundation's Swift interface merges keys that are canonically equivalent (`"é"` as
/// U+00E9 and as `e` + U+0301), on every platform. This store keeps keys exact by refusing
/// instead: writing a key equivalent to, but spelled differently from, a stored key throws
/// ``StoreError`` (`.keyConflict`), and reading a key with no exact match finds
/// nothing. Every failure of this store is a ``StoreError``; through
/// ``Preferences`` it arrives wrapped in a ``PreferenceError`` naming the key.
public final class UserDefaultsStore: PreferenceStore {
    /// The `UserDefaults` this store reads and writes.
    ///
    /// (`nonisolated(unsafe)`: Foundation documents `UserDefaults` as thread-safe, but on Linux
    /// the class is not marked `Sendable`.)
    package nonisolated(unsafe) let defaults: UserDefaults
    /// The persistent domain listed by `keys()` and `snapshot()`; `nil` lists the app's own
    /// (`Bundle.main.bundleIdentifier`, else the process's name).
    public let domain: String?

    // Serializes this process's writes, so a transaction's read-modify-write is atomic here.
    private let writeLock: TransactionLock<Void>
    let observers: StoreObservers
    // The domain as last seen, kept once someone observes, to find what a raw write changed.
    private let knownDomain = Locked<[StoreKey: PropertyListValue]?>(nil)
    private let notificationToken = Locked<NotificationToken?>(nil)
    // The domain's estimated size, counted at the first write (see `DomainSizeLedger`).
    private let ledger = Locked<DomainSizeLedger?>(nil)
    #if canImport(Darwin)
        // Watches the observed keys for other processes' writes, from the first keyed observation.
        private let keyWatcher = Locked<UserDefaultsKeyWatcher?>(nil)
    #endif

    /// The store for `UserDefaults.standard` and the program's own domain.
    ///
    /// ```swift
    /// let prefs = Preferences(store: UserDefaultsStore.standard)
    /// ```
    public static let standard = UserDefaultsStore(
        UserDefaults.standard,
        domain: UserDefaultsStore.appDomainName)

    /// A store for a named suite (an app group on Apple platforms, a plist file name on Linux).
    ///
    /// Throws ``StoreError`` (`.suiteRefused`) when Foundation cannot open the suite
    /// (Apple platforms refuse the app's own bundle identifier and `NSGlobalDomain` as suite
    /// names): use ``standard`` for the app's own domain.
    ///
    /// ```swift
    /// let store = try UserDefaultsStore(suiteName: "group.example")
    /// ```
    public convenience init(suiteName: String) throws {
        guard suiteName != Bundle.main.bundleIdentifier, let defaults = UserDefaults(suiteName: suiteName)
        else {
            throw StoreError.userDefaults(.suiteRefused, suite: suiteName)
        }
        self.init(defaults, domain: suiteName)
    }

    /// Whether every write is synchronized to disk before it returns (Linux only; Apple platforms
    /// persist writes by themselves).
    package let synchronizesEachWrite: Bool

    /// The size in bytes the domain is kept under: a write that would take it there is refused
    /// with ``StoreError`` of kind `.tooLarge` (see ``init(_:domain:synchronizesEachWrite:sizeLimit:)``).
    package let sizeLimit: Int

    /// A store over a given `UserDefaults`; `domain` is the persistent domain its keys are
    /// listed from (when `nil`, the app's own domain: give a suite's name for a suite).
    ///
    /// ```swift
    /// let store = UserDefaultsStore(UserDefaults(suiteName: "tests")!, domain: "tests")
    /// ```
    ///
    /// `synchronizesEachWrite: false` leaves writes in Foundation's memory until someone calls
    /// `synchronize()` (on Linux a crash or exit loses them): faster, and as plain `UserDefaults`
    /// behaves there.
    ///
    /// `sizeLimit` is the size in bytes the domain is kept under, as a binary property list
    /// (estimated from above); `nil` is the platform's limit: 1,000,000 on tvOS and watchOS, 4 MiB
    /// elsewhere (Apple's `UserDefaults` drops writes past it, and tvOS ends the app; Linux takes
    /// the same 4 MiB). A write or transaction that would take the domain to it is refused whole
    /// with ``StoreError`` of kind `.tooLarge`; one that shrinks the domain is always taken.
    public init(
        _ defaults: UserDefaults, domain: String? = nil, synchronizesEachWrite: Bool = true,
        sizeLimit: Int? = nil
    ) {
        let sizeLimit = sizeLimit ?? Self.platformSizeLimit
        precondition(
            sizeLimit > 0, "UserDefaultsStore: sizeLimit must be a positive number of bytes, not \(sizeLimit)"
        )
        self.defaults = defaults
        self.domain = domain
        self.synchronizesEachWrite = synchronizesEachWrite
        self.sizeLimit = sizeLimit
        self.observers = StoreObservers(label: "UserDefaults.\(domain ?? "custom")")
        self.writeLock = TransactionLock(
            (), store: "UserDefaults(suite: \(domain ?? "custom"))", timeout: .seconds(10))
    }

    /// `UserDefaults(suite: NAME)`.
    public var description: String { "UserDefaults(suite: \(domain ?? "custom"))" }

    /// The value `UserDefaults` returns for `key`, or `nil` when there is none or it is not a
    /// property-list value.
    public func value(forKey key: String) -> PropertyListValue? {
        guard let object = defaults.object(forKey: key) else { return nil }
        // Foundation answers for any canonically equivalent key; only an exact one counts.
        if Self.mayHaveAnotherSpelling(key), storedSpelling(of: key).map(StoreKey.init(_:)) != StoreKey(key) {
            return nil
        }
        return PropertyListValue(foundationObject: object)
    }

    /// The value the suite holds for `key`: as ``value(forKey:)``, but a default only registered
    /// (`UserDefaults.register(defaults:)`, ``registerDefaults(of:)``) is not a stored value.
    ///
    /// ```swift
    /// UserDefaults.standard.register(defaults: ["volume": 0.8])
    /// UserDefaultsStore.standard.storedValue(forKey: "volume")  // nil until the user sets it
    /// ```
    ///
    /// Values of other domains that `UserDefaults` also reads (the global domain, command-line
    /// arguments) are not stored in the suite either. A store over a `UserDefaults` without a
    /// domain name does not know the object's domain, and counts what `UserDefaults` reads.
    package func storedValue(forKey key: String) -> PropertyListValue? {
        guard let domain else { return value(forKey: key) }
        // Nothing anywhere is the common answer, and the cheap one.
        guard defaults.object(forKey: key) != nil else { return nil }
        // The suite's own domain (Foundation on Linux lists no registration domain to subtract),
        // looked up by the exact key, as every read of this store is.
        let values = defaults.persistentDomain(forName: domain) ?? [:]
        guard let index = values.index(forKey: key), StoreKey(values[index].key) == StoreKey(key) else {
            return nil
        }
        return PropertyListValue(foundationObject: values[index].value)
    }

    /// The spelling of the stored key that Foundation takes `key` for, if any.
    private func storedSpelling(of key: String) -> String? {
        let objects = persistentObjects()
        guard let index = objects.index(forKey: key) else { return nil }
        return objects[index].key
    }

    /// Whether another spelling of `key` could be canonically equivalent to it: an ASCII key has
    /// none, except through the three characters that are the canonical form of a non-ASCII one
    /// (`K` of U+212A KELVIN SIGN, `` ` `` of U+1FEF, `;` of U+037E).
    static func mayHaveAnotherSpelling(_ key: String) -> Bool {
        !key.utf8.allSatisfy {
            $0 < 0x80 && $0 != UInt8(ascii: "K") && $0 != UInt8(ascii: "`") && $0 != UInt8(ascii: ";")
        }
    }

    /// Throws when a write to `key` would land on a stored key spelled differently.
    ///
    /// Free for ASCII keys (almost all); a look through the domain for the others.
    private func checkSpelling(of keys: some Sequence<StoreKey>) throws {
        for key in keys where Self.mayHaveAnotherSpelling(key.name) {
            if let stored = storedSpelling(of: key.name), StoreKey(stored) != key {
                throw StoreError.userDefaults(.keyConflict, suite: domain, keys: [key.name, stored])
            }
        }
    }

    /// Stores or removes one value, durably on Linux.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws {
        // No transaction to run: no reader closures, no dictionary of writes.
        try writeLock.withLock(during: "a write") { _ in
            try value?.checkNesting()
            try commit([(StoreKey(key), value)])
        }
    }

    /// Every key of the persistent domain (the app's own, for a store without a domain name) and
    /// its value: never the global domain's, other apps', or registered defaults, nor the keys
    /// the store keeps key descriptions under.
    public func snapshot() -> [StoreKey: PropertyListValue] {
        let objects = persistentObjects()
        var result: [StoreKey: PropertyListValue] = [:]
        result.reserveCapacity(objects.count)
        for (key, object) in objects where !Self.isReservedKey(key) {
            if let value = PropertyListValue(foundationObject: object) { result[StoreKey(key)] = value }
        }
        return result
    }

    /// Runs `body` while no other write of this process can happen, then applies its writes; on
    /// Linux they are synchronized to disk, and restored when that fails.
    ///
    /// Atomic within the process only: another process writing the same suite can interleave.
    public func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try writeLock.withLock(during: "a write or transaction") { _ in try run(body) }
    }

    /// The same in the system's background time: the wait for another thread's write ends,
    /// throwing `.expired`, as soon as the system asks for the time back (a synced store's own
    /// writes).
    package func transaction<Result>(
        expiry: ExpiringActivity.Expiry, _ body: (inout StoreTransaction) throws -> Result
    ) throws -> Result {
        let expired = { expiry.isExpired }
        return try writeLock.withLock(during: "a write or transaction", givingUpWhen: expired) { _ in
            try run(body)
        }
    }

    /// Runs a transaction's body and commits its writes, holding the write lock.
    private func run<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        // What is stored, never a registered default: a migration or an update must not
        // write back a value the user never had.
        var transaction = StoreTransaction(
            read: { [self] in storedValue(forKey: $0) }, keys: { [self] in snapshot().keys.map(\.name) })
        let result = try body(&transaction)
        try PropertyListValue.checkNesting(of: transaction.writes)
        try commit(transaction.writes.map { ($0.key, $0.value.newValue) })
        return result
    }

    /// Writes the values (holding the write lock) and tells observers, when there are any, what
    /// was stored.
    private func commit(_ writes: [(key: StoreKey, value: PropertyListValue?)]) throws {
        let applied = try apply(writes)
        guard observers.count > 0 else { return }
        observers.publish(StoreChange(newValues: Dictionary(applied, uniquingKeysWith: { $1 })))
    }

    /// Calls `handler` with every change until the observation ends.
    ///
    /// Every write through this store object, and raw `UserDefaults` writes to the domain that
    /// Foundation announces with `UserDefaults.didChangeNotification` (in this process, on Apple
    /// platforms; Foundation on Linux announces none). Other processes' writes are seen only for
    /// keys observed by name (`observe(.volume)`, `@Pref`, …), as Apple offers no notification of a whole domain
    /// across processes.
    ///
    /// ```swift
    /// let observation = store.observe { change in print(change.values.keys) }
    /// ```
    public func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        let observation = observers.add(handler)
        watchForRawWrites()
        return observation
    }

    /// Calls `handler` with every change, as ``observe(_:)`` does, and on Apple platforms also
    /// with other processes' writes to `keys` (an app extension or a widget writing the App
    /// Group suite, `defaults write`), which key-value observing reports and the change
    /// notification does not.
    ///
    /// ```swift
    /// let observation = store.observe(keys: ["volume"]) { change in print(change.values) }
    /// ```
    ///
    /// Key-value observing reads a dot in a key as a key path's separator, so keys with a dot
    /// (and keys starting with `@`) are not watched across processes. Foundation on Linux has no
    /// key-value observing: there this is ``observe(_:)``.
    package func observe(keys: [String], _ handler: @escaping @Sendable (StoreChange) -> Void)
        -> StoreObservation
    {
        let observation = observe(handler)
        #if canImport(Darwin)
            guard domain != nil else { return observation }
            let watcher = keyWatcher.withLock { watcher in
                if let watcher { return watcher }
                let created = UserDefaultsKeyWatcher(defaults) { [weak self] in self?.publishRawWrites() }
                watcher = created
                return created
            }
            watcher.watch(keys)
            return StoreObservation {
                observation.cancel()
                watcher.unwatch(keys)
            }
        #else
            return observation
        #endif
    }

    /// The number of live observations of this store.
    package var observerCount: Int { observers.count }

    /// Registers the keys' defaults in `UserDefaults`' registration domain, so code that still
    /// reads `UserDefaults` directly gets them (`integer(forKey:)`, `string(forKey:)` …).
    ///
    /// ```swift
    /// UserDefaultsStore.standard.registerDefaults(of: .volume, .theme)
    /// UserDefaults.standard.double(forKey: "volume")  // 0.5, the key's default
    /// ```
    ///
    /// Nothing is stored: the registration lasts as long as the process, and (as Foundation's
    /// registration domain is) is seen by every `UserDefaults` object of the process. A
    /// registered default is not a stored value: ``Preferences/hasValue(for:)`` is `false`,
    /// ``Preferences/storedKeys`` leaves it out, and an `update` or a migration does not see it
    /// (so never writes it into the user's file); a typed read outside them gives it, as
    /// `UserDefaults.object(forKey:)` does (the key's default, for this method). Keys
    /// whose default is `nil` (optional keys) are not registered; a computed default is registered
    /// as computed now.
    public func registerDefaults(of keys: Preferences.Keys...) {
        var defaults: [String: Any] = [:]
        for key in keys {
            if let encoded = key.encodedDefault { defaults[key.name] = encoded.foundationObject }
        }
        self.defaults.register(defaults: defaults)
    }

    deinit {
        if let token = notificationToken.withLock({ $0 }) {
            NotificationCenter.default.removeObserver(token.object)
        }
        #if canImport(Darwin)
            keyWatcher.withLock { $0 }?.retire()
        #endif
    }

    /// Starts, once, to compare the domain with what it was whenever Foundation announces a change.
    private func watchForRawWrites() {
        guard domain != nil else { return }
        let isNew = knownDomain.withLock { known in
            guard known == nil else { return false }
            known = snapshot()
            return true
        }
        guard isNew else { return }
        // Only this store's own `UserDefaults` object: any other write in the app would otherwise
        // cost a copy of the whole domain.
        let token = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
        ) { [weak self] _ in
            self?.publishRawWrites()
        }
        notificationToken.withLock { $0 = NotificationToken(object: token) }
    }

    private func publishRawWrites() {
        // Apple posts the notification synchronously on the writing thread, once per `set`: during
        // this store's own write of several keys the domain is half-written. Those writes are
        // published by the write itself, once, when complete.
        guard !writeLock.isHeldByCurrentThread else { return }
        // The domain is read holding the write lock and the known domain's lock: a look from
        // another thread (key-value observing) racing the store's own write would otherwise take
        // a snapshot from before the write, publish it as a "reverted" value, and then the write
        // again as a duplicate.
        let changed: [StoreKey: PropertyListValue?]? = try? writeLock.withLock(during: "a look at raw writes")
        { _ in
            knownDomain.withLock { known in
                guard let previous = known else { return [:] }
                let current = snapshot()
                known = current
                var changed: [StoreKey: PropertyListValue?] = [:]
                for (key, value) in current where previous[key] != value { changed[key] = .some(value) }
                for key in previous.keys where current[key] == nil { changed[key] = .some(nil) }
                return changed
            }
        }
        // The notification and key-value observing both report a write: the second finds nothing.
        guard let changed, !changed.isEmpty else { return }
        observers.publish(StoreChange(newValues: changed))
    }

    /// Records this store's own writes as known before they are made, so that the announcement
    /// Foundation makes of them is not published a second time as a raw write.
    private func recordAsKnown(_ objects: [(key: StoreKey, value: PropertyListValue?)]) {
        knownDomain.withLock { known in
            guard known != nil else { return }
            for (key, value) in objects where !Self.isReservedKey(key.name) { known?[key] = value }
        }
    }

    /// Writes key descriptions under their reserved keys, as one write of the store (checked for
    /// size, durable on Linux) that no observer hears of.
    func writeReserved(_ writes: [(key: StoreKey, value: PropertyListValue?)]) throws {
        try writeLock.withLock(during: "a write of key descriptions") { _ in
            _ = try apply(writes, reserved: true)
        }
    }

    /// Writes the values (each key once) and returns them as stored; a reserved key (a key
    /// description's) is refused unless `reserved`.
    private func apply(
        _ writes: [(key: StoreKey, value: PropertyListValue?)], reserved: Bool = false
    ) throws -> [(key: StoreKey, value: PropertyListValue?)] {
        guard !writes.isEmpty else { return writes }
        if !reserved, let write = writes.first(where: { Self.isReservedKey($0.key.name) }) {
            throw StoreError.userDefaults(.invalidKey, suite: domain, keys: [write.key.name])
        }
        try checkSpelling(of: writes.lazy.map(\.key))
        #if canImport(Darwin)
            let projection = try checkSize(of: writes)
            recordAsKnown(writes)
            for (key, value) in writes { write(value, forKey: key.name) }
            ledger.withLock { $0?.record(projection) }
        #else
            // (Mapped only when a value holds a date: a copy of the writes is an allocation.)
            let writes =
                writes.contains { $0.value?.holdsDate ?? false }
                ? writes.map { (key: $0.key, value: $0.value.map(Self.wholeSeconds)) } : writes
            let projection = try checkSize(of: writes)
            recordAsKnown(writes)
            // Foundation on Linux keeps writes in memory until `synchronize()`; when that fails,
            // put the old values back so memory and disk agree and nothing half-written remains.
            let previous =
                synchronizesEachWrite ? writes.map { ($0.key, defaults.object(forKey: $0.key.name)) } : []
            for (key, value) in writes { write(value, forKey: key.name) }
            if synchronizesEachWrite && !defaults.synchronize() {
                write(previous)
                recordAsKnown(
                    previous.map { ($0.0, $0.1.flatMap(PropertyListValue.init(foundationObject:))) })
                throw StoreError.userDefaults(
                    .writeFailed, suite: domain, keys: writes.map(\.key).sorted().map(\.name))
            }
            ledger.withLock { $0?.record(projection) }
        #endif
        return writes
    }

    /// The domain's estimated size after `writes`, or ``StoreError`` (`.tooLarge`) when they
    /// would take it to the limit and grow it.
    ///
    /// The domain is counted at the first write, and again when the count is old (other writers
    /// may have added to it) and before a refusal, so that no write is refused on a stale count.
    private func checkSize(
        of writes: [(key: StoreKey, value: PropertyListValue?)]
    ) throws -> (total: Int, sizes: [(key: StoreKey, size: Int?)]) {
        let now = DispatchTime.now().uptimeNanoseconds
        func refuses(_ projection: (total: Int, sizes: [(key: StoreKey, size: Int?)]), _ before: Int) -> Bool
        {
            projection.total >= sizeLimit && projection.total > before
        }
        return try ledger.withLock { stored in
            var current: DomainSizeLedger
            var counted = false
            if let known = stored, !known.isStale(at: now, limit: sizeLimit) {
                current = known
            } else {
                current = DomainSizeLedger(domain: persistentObjects(), at: now)
                counted = true
            }
            var projection = current.projected(writes)
            if refuses(projection, current.total) && !counted {
                current = DomainSizeLedger(domain: persistentObjects(), at: now)
                projection = current.projected(writes)
            }
            stored = current
            guard refuses(projection, current.total) else { return projection }
            throw tooLarge(writes, projection: projection)
        }
    }

    /// The refusal of `writes`, naming the largest entry written.
    private func tooLarge(
        _ writes: [(key: StoreKey, value: PropertyListValue?)],
        projection: (total: Int, sizes: [(key: StoreKey, size: Int?)])
    ) -> StoreError {
        let largest = projection.sizes.max { ($0.size ?? 0) < ($1.size ?? 0) } ?? projection.sizes[0]
        return StoreError.domainTooLarge(
            suite: domain, keys: writes.map(\.key.name), largest: largest.key.name,
            size: largest.size ?? 0,
            total: projection.total, limit: sizeLimit)
    }

    /// The persistent domain the store lists: its own, or for a store without a domain name the
    /// app's (`Bundle.main.bundleIdentifier`, else the process's name), never the global domain.
    func persistentObjects() -> [String: Any] {
        defaults.persistentDomain(forName: domain ?? Self.appDomainName) ?? [:]
    }

    /// The app's own domain: `Bundle.main.bundleIdentifier`, else the process's name.
    package static var appDomainName: String {
        Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
    }

    /// The value with every date cut to whole seconds, as Foundation's XML plist keeps it on Linux.
    static func wholeSeconds(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .date(let date): .date(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
        case .array(let elements): .array(elements.map(wholeSeconds))
        case .dictionary(let entries): .dictionary(entries.mapValues(wholeSeconds))
        default: value
        }
    }

    /// Stores `value` through `UserDefaults`' typed setter where it has one, as a plain `set` of
    /// an `Int`, `Double` or `Bool` does: given the number as `Any`, `set(_:forKey:)` finds its
    /// object by a cast at run time, bridging it (a twentieth of a write on Linux).
    private func write(_ value: PropertyListValue?, forKey name: String) {
        switch value {
        case nil: defaults.removeObject(forKey: name)
        case .integer(let integer)? where Int(exactly: integer) != nil:
            defaults.set(Int(truncatingIfNeeded: integer), forKey: name)  // exact: checked above
        case .double(let double)?: defaults.set(double, forKey: name)
        case .bool(let bool)?: defaults.set(bool, forKey: name)
        case let value?: defaults.set(value.foundationObject, forKey: name)
        }
    }

    private func write(_ objects: [(StoreKey, Any?)]) {
        for (key, object) in objects {
            if let object {
                defaults.set(object, forKey: key.name)
            } else {
                defaults.removeObject(forKey: key.name)
            }
        }
    }
}

/// What `NotificationCenter` returns for a block observer, kept to remove it.
///
/// (`@unchecked Sendable`: the token is never used but to hand it back to the thread-safe
/// `removeObserver(_:)`.)
private struct NotificationToken: @unchecked Sendable {
    let object: any NSObjectProtocol
}

extension PropertyListValue {
    /// Whether the value is a date or a collection holding one (at any depth).
    fileprivate var holdsDate: Bool {
        switch self {
        case .date: true
        case .array(let elements): elements.contains { $0.holdsDate }
        case .dictionary(let entries): entries.values.contains { $0.holdsDate }
        case .bool, .integer, .unsignedInteger, .double, .string, .data: false
        }
    }
}

extension UserDefaultsStore: PrefsOwnStore {}
