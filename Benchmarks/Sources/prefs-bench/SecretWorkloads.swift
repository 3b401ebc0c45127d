import Foundation
import Prefs

/// A raw libsecret lookup, the baseline of secret reads.
///
/// One search by attributes in the
/// Secret Service, as a program calling libsecret itself (`secret_password_lookupv_sync`)
/// makes. Loaded with `dlopen` when the benchmark runs, as Prefs loads it.
final class RawSecretLookup: @unchecked Sendable {
    private typealias HashTableNew =
        @convention(c) (
            @convention(c) (UnsafeRawPointer?) -> UInt32,
            @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> Int32
        )
        -> OpaquePointer?
    private typealias HashTableInsert =
        @convention(c) (OpaquePointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> Int32
    private typealias HashTableUnref = @convention(c) (OpaquePointer?) -> Void
    private typealias StrHash = @convention(c) (UnsafeRawPointer?) -> UInt32
    private typealias StrEqual = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> Int32
    private typealias SchemaNew =
        @convention(c) (UnsafePointer<CChar>, Int32, OpaquePointer?) -> OpaquePointer?
    private typealias Lookup =
        @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?)
        ->
        UnsafeMutablePointer<CChar>?
    private typealias PasswordFree = @convention(c) (UnsafeMutablePointer<CChar>?) -> Void

    private let lookup: Lookup
    private let free: PasswordFree
    private let unref: HashTableUnref
    private let attributes: OpaquePointer?
    private let schema: OpaquePointer?
    private let names: [UnsafeMutablePointer<CChar>]

    /// Looks up the item of `service` and `account` (as Prefs stores them); throws where
    /// libsecret is missing.
    init(service: String, account: String) throws {
        guard let library = dlopen("libsecret-1.so.0", RTLD_NOW) else {
            throw BenchError("libsecret is not installed")
        }
        func find<T>(_ name: String, _ type: T.Type) throws -> T {
            guard let address = dlsym(library, name) else { throw BenchError("libsecret has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        let new = try find("g_hash_table_new", HashTableNew.self)
        let insert = try find("g_hash_table_insert", HashTableInsert.self)
        let hash = try find("g_str_hash", StrHash.self)
        let equal = try find("g_str_equal", StrEqual.self)
        unref = try find("g_hash_table_unref", HashTableUnref.self)
        lookup = try find("secret_password_lookupv_sync", Lookup.self)
        free = try find("secret_password_free", PasswordFree.self)
        names = ["service", "account", service, account].map { (text: String) in strdup(text)! }
        let types = new(hash, equal)
        _ = insert(types, names[0], nil)
        _ = insert(types, names[1], nil)
        // SECRET_SCHEMA_DONT_MATCH_NAME: by the attributes alone, as Prefs looks items up.
        schema = try find("secret_schema_newv", SchemaNew.self)("org.prefs.Secret", 1 << 1, types)
        unref(types)
        attributes = new(hash, equal)
        _ = insert(attributes, names[0], names[2])
        _ = insert(attributes, names[1], names[3])
    }

    /// The item's text, or `nil`.
    func text() -> String? {
        guard let password = lookup(schema, attributes, nil, nil) else { return nil }
        defer { free(password) }
        return String(cString: password)
    }
}

extension Workloads {
    /// A secret key's read answered in the process (the item unchanged) against a plain key's
    /// read on the same store; the first read of a handle (which asks the Secret Service) against
    /// a raw libsecret lookup of the same item.
    func secretReads() throws -> (cached: Measure.SideBySide, first: Measure.SideBySide) {
        let store = try SQLiteStore(path: Scratch.path("secrets.sqlite"))
        let service = "prefs-bench.\(getpid())"
        let secret = Preferences.Key<String?>("token", storedAs: .secret)
        let plain = Preferences.Key<String?>("plain")
        let prefs = Preferences(store: store, secrets: .system(service: service))
        try prefs.set("bench-token-value", for: secret)
        try prefs.set("bench-plain-value", for: plain)
        defer { prefs.reset(secret) }
        guard try Preferences(store: store, secrets: .system(service: service)).value(for: secret) != nil
        else {
            throw BenchError("the secret written could not be read back")
        }
        let reads = sizes.reads / Measure.turnsPerRepetition
        let cached = Measure.sideBySide(
            operations: reads, repetitions: sizes.repetitions * Measure.turnsPerRepetition,
            { for _ in 0..<reads { consume(prefs[plain]) } },
            { for _ in 0..<reads { consume(prefs[secret]) } })
        let raw = try RawSecretLookup(service: service, account: "token")
        guard raw.text() == "bench-token-value" else { throw BenchError("libsecret did not find the item") }
        let lookups = max(sizes.reads / 2_000, 50)
        let first = Measure.sideBySide(
            operations: lookups, repetitions: sizes.repetitions,
            { for _ in 0..<lookups { consume(raw.text()) } },
            {
                for _ in 0..<lookups {
                    consume(Preferences(store: store, secrets: .system(service: service))[secret])
                }
            })
        return (cached, first)
    }
}

extension Suite {
    /// Secret keys, where a Secret Service answers (a desktop session, or `dbus-run-session`
    /// with `gnome-keyring-daemon --unlock`); skipped, saying so, where none does.
    static func secretReads(_ run: inout BenchRun) throws -> [Metric] {
        #if os(Linux)
            let reads: (cached: Measure.SideBySide, first: Measure.SideBySide)
            do {
                reads = try run.workloads.secretReads()
            } catch {
                print("secret reads: skipped, no Secret Service to measure against: \(error)")
                return []
            }
            return [
                Metric(
                    key: "secret_cached_read_vs_plain",
                    what:
                        "typed read of a secret String key, answered in the process (the item unchanged: the store's stamp read and compared) ÷ the same read of a plain key on the same SQLiteStore, in turns; baseline = ns per plain read",
                    baseline: reads.cached.first, value: reads.cached.ratio, unit: "ratio", goal: nil),
                Metric(
                    key: "secret_first_read_vs_raw_libsecret",
                    what:
                        "a new handle's first read of the secret (it asks the Secret Service, over D-Bus) ÷ a raw libsecret lookup of the same item (secret_password_lookupv_sync), in turns; baseline = ns per raw lookup; leaves out the daemon's own CPU",
                    baseline: reads.first.first, value: reads.first.ratio, unit: "ratio", goal: nil),
            ]
        #else
            return []
        #endif
    }
}
