import Foundation
import Prefs

/// The store a `prefs` command works on, chosen with `--store`, and its domains.
///
/// - `default`: the platform default; on Linux one SQLite file per domain under
///   `$XDG_CONFIG_HOME/prefs/`, the very file `Preferences.standard` of a program named DOMAIN uses.
/// - `sqlite:FOLDER`: the same layout in another folder; `sqlite:FILE.sqlite`: one file, one domain
///   (named after the file).
/// - `userdefaults`: Foundation's own `UserDefaults` domains (suites).
/// - `postgres://…`: a PostgreSQL database, one namespace per domain; `--namespace N` limits it to
///   the one namespace N.
enum StoreChoice: Sendable {
    case folder(String)
    case file(String)
    case userDefaults
    case postgres(url: String, namespace: String?)

    static func parse(_ text: String) throws -> StoreChoice {
        switch text {
        case "default":
            #if canImport(Darwin)
                return .userDefaults
            #else
                return .folder((SQLiteStore.defaultPath(domain: "_") as NSString).deletingLastPathComponent)
            #endif
        case "userdefaults": return .userDefaults
        case _ where text.hasPrefix("sqlite:"):
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw CLIError.usage("--store sqlite: needs a path, as in sqlite:/var/lib/app/prefs")
            }
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            return path.hasSuffix(".sqlite") || (exists && !isFolder.boolValue) ? .file(path) : .folder(path)
        case _ where text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"):
            return .postgres(url: text, namespace: nil)
        default:
            throw CLIError.usage(
                "unknown store '\(text)'; use default, userdefaults, sqlite:PATH or postgres://…")
        }
    }

    /// Every domain that exists in the store, sorted.
    func domains() throws -> [String] {
        switch self {
        case .folder(let folder):
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            return names.filter { $0.hasSuffix(".sqlite") }.map { String($0.dropLast(".sqlite".count)) }
                .sorted()
        case .file(let path):
            return FileManager.default.fileExists(atPath: path) ? [Self.domain(ofFile: path)] : []
        case .userDefaults:
            let names = (try? FileManager.default.contentsOfDirectory(atPath: Self.foundationFolder)) ?? []
            return names.filter { $0.hasSuffix(".plist") }.map { String($0.dropLast(".plist".count)) }
                .sorted()
        case .postgres(let url, let namespace):
            if let namespace { return [namespace] }
            return try PostgresDomains.namespaces(url: url)
        }
    }

    /// The store of an existing domain, or `nil` when the domain does not exist (nothing is created).
    func existingStore(_ domain: String) throws -> (any PreferenceStore)? {
        switch self {
        case .folder, .file:
            let path = try sqlitePath(domain)
            return FileManager.default.fileExists(atPath: path) ? try openSQLite(path) : nil
        case .userDefaults:
            guard let defaults = UserDefaults(suiteName: domain),
                defaults.persistentDomain(forName: domain) != nil
            else {
                return nil
            }
            return UserDefaultsStore(defaults, domain: domain)
        case .postgres:
            let opened = try store(domain)
            return opened.allKeys().isEmpty ? nil : opened
        }
    }

    /// For a domain this store lacks, where a porter would find it: a SQLite folder's domain that
    /// only Foundation's `UserDefaults` holds (an app not yet switched to Prefs) is named with the
    /// option that reads it; `""` otherwise.
    func elsewhere(_ domain: String) -> String {
        guard case .folder = self, (try? StoreChoice.userDefaults.domains())?.contains(domain) == true else {
            return ""
        }
        return "; it exists in UserDefaults (Foundation's \(domain).plist): "
            + "prefs --store userdefaults read \(domain)"
    }

    /// The administrator's layer of a domain, as a program that names the domain reads it
    /// (`Preferences.standard(domain:)`): a `UserDefaults` domain's managed preferences on Apple
    /// platforms; elsewhere, and for SQLite and PostgreSQL stores, the administrator's files.
    func administratorLayer(_ domain: String) -> SystemLayer {
        #if canImport(Darwin)
            if case .userDefaults = self, let defaults = UserDefaults(suiteName: domain) {
                return .managed(defaults)
            }
        #endif
        return SystemLayer(domain: domain)
    }

    /// The store of a domain, created when it does not exist.
    func store(_ domain: String) throws -> any PreferenceStore {
        switch self {
        case .folder, .file:
            return try openSQLite(try sqlitePath(domain))
        case .userDefaults:
            guard let defaults = UserDefaults(suiteName: domain) else {
                throw CLIError.badInput("'\(domain)' cannot be used as a UserDefaults suite name")
            }
            return UserDefaultsStore(defaults, domain: domain)
        case .postgres(let url, let namespace):
            if let namespace, namespace != domain {
                throw CLIError.badInput("--namespace limits this store to the single domain '\(namespace)'")
            }
            return try PostgresDomains.store(url: url, namespace: domain)
        }
    }

    /// Removes a whole domain; false when it did not exist.
    func deleteDomain(_ domain: String) throws -> Bool {
        switch self {
        case .folder, .file:
            let path = try sqlitePath(domain)
            guard FileManager.default.fileExists(atPath: path) else { return false }
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                do {
                    try FileManager.default.removeItem(atPath: path + suffix)
                } catch {
                    throw CLIError.store("cannot remove \(path + suffix): \(error.localizedDescription)")
                }
            }
            return true
        case .userDefaults:
            guard let defaults = UserDefaults(suiteName: domain),
                defaults.persistentDomain(forName: domain) != nil
            else {
                return false
            }
            defaults.removePersistentDomain(forName: domain)
            guard defaults.synchronize() else {
                throw CLIError.store("Foundation could not write the domain \(domain)")
            }
            return true
        case .postgres:
            guard let found = try existingStore(domain) else { return false }
            try PostgresDomains.run { try found.transaction { t in for key in t.keys { t[key] = nil } } }
            return true
        }
    }

    private func sqlitePath(_ domain: String) throws -> String {
        guard !domain.isEmpty, !domain.contains("/"), domain != ".", domain != ".." else {
            throw CLIError.badInput("'\(domain)' is not a domain name (no '/', not empty)")
        }
        switch self {
        case .folder(let folder): return "\(folder)/\(domain).sqlite"
        case .file(let path):
            guard domain == Self.domain(ofFile: path) else {
                throw CLIError.badInput(
                    "this store is one file with the single domain '\(Self.domain(ofFile: path))'")
            }
            return path
        case .userDefaults, .postgres: fatalError("not a SQLite store")
        }
    }

    private func openSQLite(_ path: String) throws -> SQLiteStore {
        do {
            return try SQLiteStore(path: path)
        } catch {
            throw CLIError.store("\(error)")
        }
    }

    private static func domain(ofFile path: String) -> String {
        ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    /// Where Foundation keeps `UserDefaults` plists on this platform.
    private static var foundationFolder: String {
        #if canImport(Darwin)
            return NSHomeDirectory() + "/Library/Preferences"
        #else
            let environment = ProcessInfo.processInfo.environment
            if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
            return (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        #endif
    }
}
