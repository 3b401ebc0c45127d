import Foundation

extension Preferences {
    /// The program's own preferences.
    ///
    /// On Apple platforms: `UserDefaults.standard` through ``UserDefaultsStore``. On Linux: a
    /// ``SQLiteStore`` at ``SQLiteStore/defaultPath(domain:)``, which is
    /// `$XDG_CONFIG_HOME/prefs/<domain>.sqlite` (`~/.config/prefs/<domain>.sqlite` when
    /// `XDG_CONFIG_HOME` is not set), `<domain>` being the bundle identifier or else the
    /// executable's name.
    ///
    /// ```swift
    /// Preferences.standard[.volume] = 0.8
    /// ```
    ///
    /// On Linux, a corrupt file is moved aside (and reported on stderr) and an empty store is
    /// started. If the file cannot be opened at all, reads give defaults and every write throws
    /// the error that prevented opening. When an administrator's file for the domain exists at
    /// launch (``SystemLayer``: `/etc/xdg/prefs/<domain>.plist` and the like), its locked values
    /// and defaults apply. On Apple platforms, managed preferences apply through
    /// `Preferences(store: UserDefaultsStore.standard, system: .managed(.standard))`.
    public static let standard: Preferences = {
        #if canImport(Darwin)
            return Preferences(store: UserDefaultsStore.standard)
        #else
            return standard(domain: SQLiteStore.defaultDomain)
        #endif
    }()

    /// The preferences of a named domain on the platform's standard store, as every program that
    /// names the domain and the `prefs` tool see them: the same values, locks and defaults.
    ///
    /// What two programs that share settings both name: a daemon and its control tool, an app and
    /// its extension. On Linux: a ``SQLiteStore`` at ``SQLiteStore/defaultPath(domain:)`` under
    /// the administrator's layer of the domain (``SystemLayer/init(domain:)``), as
    /// ``standard`` is for the program's own domain. On Apple platforms: the domain's
    /// `UserDefaults` suite under its managed preferences (``SystemLayer/managed(_:)``); the app's
    /// own bundle identifier names `UserDefaults.standard`. The store's notices (a damaged file
    /// moved aside, a repair) go to `diagnostics` too.
    ///
    /// ```swift
    /// let shared = Preferences.standard(domain: "com.example.daemon")  // the daemon and its tool
    /// let port = shared[Preferences.Key<Int>("port", default: 8080)]
    /// ```
    ///
    /// It opens the store: call it once and keep the handle. A corrupt file is moved aside and
    /// reported, and an empty store started; a store that cannot be opened at all reads defaults
    /// and throws the reason from every write.
    public static func standard(domain: String, diagnostics: PreferenceDiagnostics = .shared)
        -> Preferences
    {
        #if canImport(Darwin)
            if domain == Bundle.main.bundleIdentifier {
                return Preferences(
                    store: UserDefaultsStore.standard, diagnostics: diagnostics, system: .managed(.standard))
            }
            do {
                let store = try UserDefaultsStore(suiteName: domain)
                let system = UserDefaults(suiteName: domain).map(SystemLayer.managed)
                return Preferences(store: store, diagnostics: diagnostics, system: system)
            } catch {
                return unavailable(error, store: "UserDefaults(suite: \(domain))", diagnostics: diagnostics)
            }
        #else
            let path = SQLiteStore.defaultPath(domain: domain)
            let layer = SystemLayer(domain: domain)
            let system = layer.path == nil ? nil : layer
            do {
                var options = SQLiteStore.Options(recreateOnCorruption: true)
                options.diagnostics = diagnostics
                return Preferences(
                    store: try SQLiteStore(path: path, options: options), diagnostics: diagnostics,
                    system: system)
            } catch {
                return unavailable(
                    error, store: "SQLiteStore(\(path))", diagnostics: diagnostics, system: system)
            }
        #endif
    }

    /// A handle whose store could not be opened: it reads defaults (and the administrator's
    /// layer) and throws `error` from every write; said once to `diagnostics`.
    private static func unavailable(
        _ error: any Error, store: String, diagnostics: PreferenceDiagnostics, system: SystemLayer? = nil
    ) -> Preferences {
        diagnostics.report(
            PreferenceIssue(
                key: "", store: store, kind: .storeNotice("\(error); preferences cannot be saved")))
        return Preferences(
            store: UnavailableStore(reason: error, description: store), diagnostics: diagnostics,
            system: system)
    }
}

extension SQLiteStore {
    /// The program's domain: its bundle identifier, or else its executable's name.
    ///
    /// ```swift
    /// SQLiteStore.defaultDomain  // "myserver"
    /// ```
    public static var defaultDomain: String {
        Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
    }

    /// Where a store of a domain lives by default: on Linux
    /// `$XDG_CONFIG_HOME/prefs/<domain>.sqlite` (`XDG_CONFIG_HOME` defaulting to `~/.config`); on
    /// Apple platforms `<Application Support>/prefs/<domain>.sqlite`, inside the app's container
    /// when it is sandboxed (as on iOS); on tvOS, which keeps no Application Support,
    /// `<Caches>/prefs/<domain>.sqlite`, which the system may purge.
    ///
    /// ```swift
    /// SQLiteStore.defaultPath(domain: "myserver")  // "/home/me/.config/prefs/myserver.sqlite"
    /// ```
    public static func defaultPath(domain: String = defaultDomain) -> String {
        #if os(tvOS)
            // tvOS gives apps no persistent Application Support: only caches, which the system
            // may purge when space runs low (see the Apple platforms article).
            let caches =
                FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?.path
                ?? NSHomeDirectory() + "/Library/Caches"
            return "\(caches)/prefs/\(fileName(domain))"
        #elseif canImport(Darwin)
            let support =
                FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first?.path
                ?? NSHomeDirectory() + "/Library/Application Support"
            return "\(support)/prefs/\(fileName(domain))"
        #else
            let environment = ProcessInfo.processInfo.environment
            let configHome: String
            if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
                configHome = xdg
            } else {
                configHome = (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
            }
            return "\(configHome)/prefs/\(fileName(domain))"
        #endif
    }

    #if canImport(Darwin)
        /// Where a store shared by an app and its extensions (widgets, share extensions …) lives:
        /// one file for every process of the App Group,
        /// `<group container>/Library/Application Support/prefs/<appGroup>.sqlite` (or
        /// `<domain>.sqlite` when a domain is given).
        ///
        /// <!-- swift: not compiled (App Groups, Apple platforms only) -->
        /// ```swift
        /// let path = SQLiteStore.defaultPath(appGroup: "group.com.example.app")!
        /// let shared = Preferences(store: try SQLiteStore(path: path))  // the same file in the widget
        /// ```
        ///
        /// The file is named after the group, never after the calling process's bundle identifier,
        /// so an app and its widget open the same store. `nil` when the system gives no container
        /// for the group. On iOS that means the app lacks the entitlement; on macOS
        /// `containerURL(forSecurityApplicationGroupIdentifier:)` returns a folder even for a group
        /// the app does not belong to, so check the entitlement there rather than the `nil`.
        public static func defaultPath(appGroup: String, domain: String? = nil) -> String? {
            guard
                let container = FileManager.default.containerURL(
                    forSecurityApplicationGroupIdentifier: appGroup)
            else { return nil }
            return sharedPath(container: container.path, appGroup: appGroup, domain: domain)
        }
    #endif

    /// The path of a store shared by an App Group, inside the group's container (the naming of
    /// ``defaultPath(appGroup:domain:)``, on every platform so that it is tested everywhere).
    static func sharedPath(container: String, appGroup: String, domain: String?) -> String {
        "\(container)/Library/Application Support/prefs/\(fileName(domain ?? appGroup))"
    }

    /// A domain as a file name: it must not name another folder.
    private static func fileName(_ domain: String) -> String {
        domain.replacingOccurrences(of: "/", with: "_") + ".sqlite"
    }
}
