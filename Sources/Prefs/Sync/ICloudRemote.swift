import Foundation

/// A ``SyncRemote`` on iCloud's key-value storage (`NSUbiquitousKeyValueStore`): a user's
/// settings on all their devices.
///
/// Each synced key is one key of the app's key-value store, `prefs:` and its name, holding the
/// value with its stamp (a removal is a stamp without a value). iCloud keeps whichever write
/// reached its server last; the replicas correct it (a replica that finds an older write than its
/// own sends its own again), so every device ends on the highest stamp.
///
/// Apple's limits are checked before writing: at most 1,024 keys and 1 MB of values for the
/// whole store (the app's own keys included; Apple does not count the keys' names), and 64 bytes
/// of UTF-8 for a key's name. A write over them is not written and stays pending on the device,
/// reported to the diagnostics; the others go. When the device leaves an account (its user signs
/// out, or another signs in), the ``SyncedStore`` forgets the synced values it holds and the
/// writes it had not sent, before it pulls the new account's. (Writes made while no account is
/// signed in stay on the device, and iCloud gives them to the next account that signs in, as
/// Apple documents.) A removal keeps its key in the store, with its stamp, and so one of the
/// 1,024.
///
/// The app needs the iCloud key-value storage entitlement
/// (`com.apple.developer.ubiquity-kvstore-identifier`). On Linux there is no iCloud: the type
/// exists so that its logic is tested there, against a stand-in that behaves as Apple documents.
///
/// <!-- swift: not compiled (the system's store exists on Apple platforms only) -->
/// ```swift
/// let store = try SyncedStore(
///     local: UserDefaultsStore.standard, remote: ICloudRemote(), syncing: .prefixes("Settings."))
/// ```
public final class ICloudRemote: SyncRemote {
    private let storage: any UbiquitousStorage
    private let diagnostics: PreferenceDiagnostics

    /// Apple's limits for an app's key-value store.
    static let maximumKeys = 1_024
    /// Apple says 1 MB without saying which; the smaller.
    static let maximumBytes = 1_000_000
    static let maximumKeyBytes = 64
    /// What every key of this remote starts with, among the app's own keys.
    static let prefix = "prefs:"

    #if canImport(Darwin)
        /// The app's iCloud key-value store (`NSUbiquitousKeyValueStore.default`).
        ///
        /// <!-- swift: not compiled (Apple platforms only) -->
        /// ```swift
        /// let remote = ICloudRemote()
        /// ```
        public convenience init(diagnostics: PreferenceDiagnostics = .shared) {
            self.init(storage: SystemUbiquitousStorage(), diagnostics: diagnostics)
        }
    #endif

    /// A remote on `storage` (a stand-in in tests).
    package init(storage: any UbiquitousStorage, diagnostics: PreferenceDiagnostics = .shared) {
        self.storage = storage
        self.diagnostics = diagnostics
    }

    /// `ICloudRemote`.
    public var description: String { "ICloudRemote" }

    /// Writes each entry that fits Apple's limits into the key-value store.
    ///
    /// The store sends them to iCloud when it can. Throws a ``StoreError`` of kind `.tooLarge`
    /// naming those that do not fit (after writing the others). Never refuses by stamp: iCloud
    /// keeps the last arrival.
    public func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
        let held = storage.dictionaryRepresentation
        var sizes = held.mapValues(Self.size(of:))
        var untaken: [(key: String, why: String)] = []
        for entry in entries {
            let name = Self.prefix + entry.key
            let record = Self.record(of: entry)
            let size = Self.size(of: record)
            var why: String?
            if name.utf8.count > Self.maximumKeyBytes {
                why = "its name is longer than iCloud's \(Self.maximumKeyBytes) bytes"
            } else if sizes[name] == nil, sizes.count + 1 > Self.maximumKeys {
                why = "iCloud's store holds \(Self.maximumKeys) keys already"
            } else if sizes.values.reduce(0, +) - (sizes[name] ?? 0) + size > Self.maximumBytes {
                why = "iCloud's 1 MB would be exceeded (this value is \(size) bytes)"
            }
            if let why {
                untaken.append((entry.key, why))
                continue
            }
            storage.set(record, forKey: name)
            sizes[name] = size
        }
        guard untaken.isEmpty else {
            throw StoreError(
                kind: .tooLarge, store: description,
                message: untaken.map { "\($0.key): \($0.why)" }.joined(separator: "; "),
                keys: untaken.map(\.key))
        }
        return []
    }

    /// Every entry the key-value store holds (it is small: the cursor is not needed).
    public func pull(after cursor: PropertyListValue?) throws -> (
        entries: [SyncEntry], cursor: PropertyListValue?
    ) {
        let entries = storage.dictionaryRepresentation.compactMap { name, object -> SyncEntry? in
            guard name.hasPrefix(Self.prefix) else { return nil }
            return Self.entry(named: String(name.dropFirst(Self.prefix.count)), from: object)
        }
        return (entries, nil)
    }

    /// Hands on the key-value store's changes from elsewhere: a change from the server or the
    /// first sync as `.changed`, an account change as `.accountChanged`; a quota violation is
    /// reported to the diagnostics (the store's other writers filled it) and pulled after.
    ///
    /// Registering asks the store to synchronize, as Apple asks an app to at launch (after it
    /// registered for the changes); `false` (the app lacks the iCloud entitlement) is reported.
    public func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
        defer {
            if !storage.synchronize() {
                diagnostics.report(
                    PreferenceIssue(
                        key: "", store: description,
                        kind: .storeNotice(
                            "iCloud's key-value store refuses to synchronize: does the app have the iCloud key-value storage entitlement?"
                        )))
            }
        }
        return storage.observeExternalChanges { [diagnostics, description] reason, keys in
            switch reason {
            case .accountChange: handler(.accountChanged)
            case .quotaViolation:
                diagnostics.report(
                    PreferenceIssue(
                        key: "", store: description,
                        kind: .storeNotice(
                            "iCloud reports the app's key-value store over its quota (keys: \(keys.joined(separator: ", ")))"
                        )))
                handler(.changed)
            case .serverChange, .initialSync: handler(.changed)
            }
        }
    }

    // MARK: - Records

    /// An entry as it is kept in the key-value store: the value (`v`, absent for a removal) and
    /// the stamp (`w`, `c`, `r`).
    static func record(of entry: SyncEntry) -> Any {
        var record = entry.stamp.propertyList
        if let value = entry.value { record["v"] = value } else { record["d"] = .bool(true) }
        return PropertyListValue.dictionary(record).foundationObject
    }

    /// The entry a record holds; `nil` for an object that is not one (another writer's).
    static func entry(named key: String, from object: Any) -> SyncEntry? {
        guard case .dictionary(let record)? = PropertyListValue(foundationObject: object),
            let stamp = SyncStamp(propertyList: record)
        else { return nil }
        if record["d"] == .bool(true) { return SyncEntry(key: key, value: nil, stamp: stamp) }
        guard let value = record["v"] else { return nil }
        return SyncEntry(key: key, value: value, stamp: stamp)
    }

    /// What an object costs of the quota: its binary property list's size (Apple counts keys
    /// and values without saying how; this is near it).
    static func size(of object: Any) -> Int {
        (try? PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0))?.count
            ?? 0
    }
}

/// Why a key-value store's contents changed from elsewhere (Apple's
/// `NSUbiquitousKeyValueStoreChangeReasonKey` values).
package enum UbiquitousChangeReason: Sendable {
    case serverChange, initialSync, quotaViolation, accountChange
}

/// The calls of `NSUbiquitousKeyValueStore` that ``ICloudRemote`` makes: on Apple platforms the
/// system's store, in tests a stand-in that behaves as Apple documents.
package protocol UbiquitousStorage: AnyObject, Sendable {
    /// Every key and value of the store on this device.
    var dictionaryRepresentation: [String: Any] { get }
    /// Writes a property-list object (`nil` removes the key) on this device, to be sent.
    func set(_ object: Any?, forKey key: String)
    /// Asks for the writes to be sent and the server's to be fetched sooner.
    @discardableResult func synchronize() -> Bool
    /// Calls `handler` with each change from elsewhere: why, and the keys it names.
    func observeExternalChanges(_ handler: @escaping @Sendable (UbiquitousChangeReason, [String]) -> Void)
        -> StoreObservation
}

#if canImport(Darwin)
    /// The system's iCloud key-value store: the only code of syncing that Linux does not run.
    final class SystemUbiquitousStorage: UbiquitousStorage, @unchecked Sendable {
        // @unchecked: assumed safe from any thread, as apps use it (Apple documents this for
        // UserDefaults, not for this class); every call goes straight to the system's object.
        private let store = NSUbiquitousKeyValueStore.default

        var dictionaryRepresentation: [String: Any] { store.dictionaryRepresentation }

        func set(_ object: Any?, forKey key: String) {
            if let object { store.set(object, forKey: key) } else { store.removeObject(forKey: key) }
        }

        func synchronize() -> Bool { store.synchronize() }

        func observeExternalChanges(_ handler: @escaping @Sendable (UbiquitousChangeReason, [String]) -> Void)
            -> StoreObservation
        {
            nonisolated(unsafe) let token = NotificationCenter.default.addObserver(
                forName: NSUbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
            ) { notification in
                let info = notification.userInfo
                let keys = info?[NSUbiquitousKeyValueStoreChangedKeysKey] as? [String] ?? []
                let reason: UbiquitousChangeReason =
                    switch (info?[NSUbiquitousKeyValueStoreChangeReasonKey] as? NSNumber)?.intValue ?? -1 {
                    case NSUbiquitousKeyValueStoreInitialSyncChange: .initialSync
                    case NSUbiquitousKeyValueStoreQuotaViolationChange: .quotaViolation
                    case NSUbiquitousKeyValueStoreAccountChange: .accountChange
                    default: .serverChange
                    }
                handler(reason, keys)
            }
            return StoreObservation { NotificationCenter.default.removeObserver(token) }
        }
    }
#endif
