import Foundation
import PrefsSupport

/// Where a handle keeps the values of its secret keys (``Preferences/StoredForm/secret``): the
/// system's secret store, never a file Prefs writes.
///
/// Chosen once, when the handle is made; every secret key of the handle goes there:
///
/// - On Apple platforms, the Keychain: one generic password item per key, its service the
///   store's domain and its account the key's name.
/// - On Linux, the Secret Service over D-Bus (GNOME Keyring, KWallet), through libsecret: one
///   item per key in the default keyring, with the attributes `service` (the domain) and
///   `account` (the key's name).
///
/// ```swift
/// let prefs = Preferences(
///     store: try SQLiteStore(path: SQLiteStore.defaultPath()),
///     secrets: .system(accessGroup: "TEAMID.com.example.shared"))
/// ```
///
/// Where no secret store can be reached (a Linux server without a session bus), reading or
/// writing a secret key fails with ``StoreError/Kind/secretStoreUnavailable``: the value is never
/// kept anywhere else instead.
public struct SecretStore: Sendable {
    /// The system's secret store, or memory.
    let backend: any SecretBackend
    /// The service (domain) items are kept under, when given; otherwise the store's.
    let service: String?
    /// What was asked that this platform's secret store cannot do, told once to the handle's
    /// diagnostics.
    let notice: String?
    /// The values read or written, by service and key, with the stamp each was current at.
    let cache = SecretCache()

    /// The system's secret store: the Keychain on Apple platforms, the Secret Service on Linux.
    ///
    /// - Parameters:
    ///   - service: The service (Keychain) or `service` attribute (Secret Service) every item
    ///     takes; by default the store's domain (a `UserDefaultsStore`'s domain, a
    ///     `SQLiteStore`'s file name without `.sqlite`), else the program's bundle identifier
    ///     or name.
    ///   - accessGroup: The Keychain access group shared with other apps of the team (an App
    ///     Group's extension and its app), as the app's entitlements name it.
    ///   - readableWhileLocked: Whether the items are readable while the device is locked,
    ///     after its first unlock (`kSecAttrAccessibleAfterFirstUnlock…`, the default, for apps
    ///     that work in the background), or only while it is unlocked (`…WhenUnlocked…`).
    ///   - synchronizable: Whether the Keychain syncs the items to the user's other devices
    ///     through iCloud Keychain; otherwise they stay on this device (`…ThisDeviceOnly`).
    ///
    /// The Secret Service has no access groups, lock classes or syncing of its own (an item is
    /// the session user's, readable while their keyring is unlocked): given there, the
    /// options are told once to the handle's diagnostics, and not applied.
    ///
    /// ```swift
    /// let prefs = Preferences(store: MemoryStore(), secrets: .system(service: "com.example.app"))
    /// ```
    public static func system(
        service: String? = nil, accessGroup: String? = nil, readableWhileLocked: Bool = true,
        synchronizable: Bool = false
    ) -> SecretStore {
        #if canImport(Security)
            let backend = Keychain(
                accessGroup: accessGroup, readableWhileLocked: readableWhileLocked,
                synchronizable: synchronizable)
            return SecretStore(backend: backend, service: service, notice: nil)
        #else
            var unapplied: [String] = []
            if let accessGroup { unapplied.append("accessGroup \"\(accessGroup)\"") }
            if !readableWhileLocked { unapplied.append("readableWhileLocked: false") }
            if synchronizable { unapplied.append("synchronizable: true") }
            let notice =
                unapplied.isEmpty
                ? nil
                : "the Secret Service has no equivalent of \(unapplied.joined(separator: ", ")): "
                    + "secrets are the session user's, readable while their keyring is unlocked, and stay on this machine"
            return SecretStore(backend: SecretService(), service: service, notice: notice)
        #endif
    }

    /// Secrets held in this process's memory only, gone when it ends: for tests and previews of
    /// code that uses secret keys, on a machine with no secret store.
    ///
    /// ```swift
    /// let prefs = Preferences(store: MemoryStore(), secrets: .memory())
    /// ```
    public static func memory() -> SecretStore {
        SecretStore(backend: MemorySecrets(), service: "memory", notice: nil)
    }
}

/// A secret store's item: its bytes and what they hold (kept beside them as the item's `form`
/// attribute, or the Keychain item's generic attribute).
struct SecretItem: Equatable, Sendable {
    /// A string, as its UTF-8 bytes: what other tools show and write.
    static let textForm = "text"
    /// Any other value, in Prefs' encoding of stored values.
    static let valueForm = "value"

    var bytes: Data
    var form: String

    /// A value as an item: a string as its text, anything else in Prefs' encoding.
    init(_ value: PropertyListValue) {
        if case .string(let text) = value {
            self.init(bytes: Data(text.utf8), form: Self.textForm)
        } else {
            self.init(bytes: value.storedEncoding(), form: Self.valueForm)
        }
    }

    init(bytes: Data, form: String) {
        self.bytes = bytes
        self.form = form
    }

    /// The value the item holds: Prefs' encoding as written, else text (an item another tool
    /// wrote, such as `secret-tool store`), else the bytes as data.
    func value() throws -> PropertyListValue {
        if form == Self.valueForm { return try PropertyListValue(storedEncoding: bytes) }
        if let text = String(validatingUTF8Bytes: bytes) { return .string(text) }
        return .data(bytes)
    }
}

/// One platform's secret store (or memory), keyed by service and account.
protocol SecretBackend: Sendable {
    /// The store as errors name it ("the Keychain").
    var name: String { get }
    /// The item of `service` and `account`, or `nil`.
    func item(service: String, account: String) throws -> SecretItem?
    /// Stores the item (replacing one already there), or deletes it when `nil`.
    func setItem(_ item: SecretItem?, service: String, account: String, label: String) throws
}

/// The values of secret keys read or written in this process, each with the stamp the store
/// held beside it at the time, so that a read is answered here until the stamp changes.
///
/// The last few values written here are kept by their stamps too, so that an observer told of
/// a stamp gets the value written with it, not whatever is current by then.
final class SecretCache: Sendable {
    struct Entry: Sendable {
        let stamp: PropertyListValue?
        let value: PropertyListValue?
    }
    /// How many values written per key an observer that falls behind can still be given.
    static let keptWrites = 16
    /// A secret's place: its service and account.
    private struct Item: Hashable {
        let service: String
        let account: String
    }
    private let entries = Locked<[Item: (current: Entry, written: [Entry])]>([:])

    func entry(_ service: String, _ account: String) -> Entry? {
        entries.withLock { $0[Item(service: service, account: account)]?.current }
    }

    /// The value written here with `stamp`, when it is among the last few.
    func written(_ service: String, _ account: String, stamp: PropertyListValue) -> Entry? {
        entries.withLock { $0[Item(service: service, account: account)]?.written.last { $0.stamp == stamp } }
    }

    /// Remembers what the secret store holds now (`wrote`: because this process wrote it).
    func remember(_ entry: Entry, _ service: String, _ account: String, wrote: Bool = false) {
        entries.withLock { entries in
            let item = Item(service: service, account: account)
            var written = entries[item]?.written ?? []
            if wrote, entry.stamp != nil {
                written.append(entry)
                if written.count > Self.keptWrites { written.removeFirst() }
            }
            entries[item] = (entry, written)
        }
    }
}

/// Secrets in memory ("memory" in errors).
final class MemorySecrets: SecretBackend {
    private let items = Locked<[String: SecretItem]>([:])
    var name: String { "memory" }

    func item(service: String, account: String) throws -> SecretItem? {
        items.withLock { $0[service + "\u{0}" + account] }
    }

    func setItem(_ item: SecretItem?, service: String, account: String, label: String) throws {
        items.withLock { $0[service + "\u{0}" + account] = item }
    }
}
