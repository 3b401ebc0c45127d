import Foundation
import PrefsEngine
import PrefsSupport

/// An administrator's layer under a domain, as dconf's system databases and Apple's managed
/// preferences are: defaults that replace the program's own, and locked values the program reads
/// whatever the user stored, which no write changes.
///
/// On Linux the layer is a plist file, `<directory>/<domain>.plist`, read-only to the program,
/// holding a dictionary with `defaults` and `locked`, each a dictionary of keys and values. Write
/// it as an XML (or binary) property list — old-style text holds only strings, so a number there
/// is a string, which a key of a number type reads as its default:
///
/// ```swift
/// // /etc/xdg/prefs/com.example.app.plist: <dict><key>locked</key><dict><key>theme</key><string>dark</string></dict></dict>
/// let layer = SystemLayer(domain: "com.example.app")
/// let prefs = Preferences(store: MemoryStore(), system: layer)
/// prefs.isLocked(.theme)  // true
/// ```
///
/// The directories searched, first file found wins: `PREFS_SYSTEM_DIRS` (a `:`-separated list)
/// when set; otherwise on Linux each directory of `XDG_CONFIG_DIRS` (default `/etc/xdg`) with
/// `/prefs` appended, then `/etc/prefs`, and on Apple platforms none (an app looks at no system
/// folder; managed preferences are the administrator's layer there). A file that is not such a
/// plist gives an empty layer; the reason is reported to the diagnostics when a ``Preferences``
/// is made with the layer, again when an observed layer's file is replaced by such a one, and
/// `prefs describe DOMAIN` prints it. On Apple platforms, ``managed(_:)`` answers from what an
/// administrator manages instead: on macOS a key `objectIsForced(forKey:)` (a configuration
/// profile) is locked, elsewhere each key of the managed app configuration.
public final class SystemLayer: Sendable {
    /// The domain the layer belongs to.
    package let domain: String
    /// The file the layer was read from (`nil` when none exists, or for managed preferences).
    package let path: String?
    /// Why the file (or the managed app configuration) gave no values, when it did not.
    package var problem: String? {
        switch source {
        case .file: return state.withLock { $0.problem }
        case .managed(let defaults): return Self.managedConfiguration(in: defaults).problem
        }
    }

    private let source: Source
    private let state: Locked<Contents>
    private let observers = StoreObservers(label: "SystemLayer")
    /// Told of a new problem found when the file is read again (see ``observe(_:problems:)``),
    /// each under the number of its observation.
    private let problemHandlers = Locked<(next: UInt64, handlers: [UInt64: @Sendable (String) -> Void])>(
        (0, [:]))
    /// The timer that looks at the file while anyone observes (see ``observe(_:)``).
    private let poll = Locked<PollTimer?>(nil)

    /// A timer kept behind a lock (`@unchecked`: Dispatch documents its sources as thread-safe).
    private struct PollTimer: @unchecked Sendable {
        let source: DispatchSourceTimer
    }

    /// How often an observed layer looks at its file for a replacement (a configuration tool
    /// writes a new file and renames it over the old one).
    package static let pollInterval: Duration = .seconds(1)

    private enum Source: @unchecked Sendable {
        // `@unchecked`: Apple documents `UserDefaults` as thread-safe.
        case file(String?)
        case managed(UserDefaults)
    }

    private struct Contents {
        var defaults: [StoreKey: PropertyListValue] = [:]
        var locked: [StoreKey: PropertyListValue] = [:]
        var problem: String?
        /// The file as last read: its identity and modification time, to notice a replacement.
        var stamp: FileStamp?
    }

    /// The layer of `domain`: the first `<directory>/<domain>.plist` found in the directories
    /// searched (see ``SystemLayer``).
    ///
    /// ```swift
    /// let layer = SystemLayer(domain: "com.example.app")
    /// ```
    public convenience init(domain: String) {
        self.init(domain: domain, directories: SystemLayer.directories())
    }

    /// The layer of `domain` from the first `<directory>/<domain>.plist` found in `directories`.
    package init(domain: String, directories: [String]) {
        self.domain = domain
        let found = directories.map { "\($0)/\(domain).plist" }.first {
            FileManager.default.fileExists(atPath: $0)
        }
        path = found
        source = .file(found)
        state = Locked(Contents())
        _ = reload()
    }

    private init(managed defaults: UserDefaults, domain: String) {
        self.domain = domain
        path = nil
        source = .managed(defaults)
        state = Locked(Contents())
    }

    /// The layer of managed settings over `defaults`, as Apple delivers them to the app.
    ///
    /// ```swift
    /// let prefs = Preferences(store: UserDefaultsStore.standard, system: .managed(.standard))
    /// ```
    ///
    /// On macOS, a key `UserDefaults` reports as forced (`objectIsForced(forKey:)`, set by a
    /// configuration profile) is locked to the value it reads. On iOS, iPadOS, tvOS, visionOS and
    /// watchOS, managed app configuration (the dictionary an MDM server puts under
    /// `com.apple.configuration.managed` in the app's `UserDefaults.standard`) is locked, key by
    /// key: where no MDM delivers one, nothing is. Linux has neither, and reads the same
    /// dictionary as iOS, so a test or a deployment tool can stand in for MDM.
    public static func managed(_ defaults: UserDefaults) -> SystemLayer {
        SystemLayer(managed: defaults, domain: "managed")
    }

    /// The key under which MDM delivers managed app configuration.
    package static let managedConfigurationKey = "com.apple.configuration.managed"

    /// The locked values of managed app configuration: each entry of the dictionary under
    /// ``managedConfigurationKey`` in `defaults`, or why there are none when something else is
    /// there.
    ///
    /// ```swift
    /// SystemLayer.managedConfiguration(in: .standard).locked["theme"]  // .string("dark")
    /// ```
    package static func managedConfiguration(in defaults: UserDefaults) -> (
        locked: [StoreKey: PropertyListValue], problem: String?
    ) {
        #if os(macOS)
            // macOS manages through configuration profiles (forced keys), not this dictionary.
            return ([:], nil)
        #else
            return lockedValues(ofManagedConfiguration: defaults.object(forKey: managedConfigurationKey))
        #endif
    }

    /// The locked values of a managed app configuration, `configuration` being what its key holds.
    package static func lockedValues(ofManagedConfiguration configuration: Any?) -> (
        locked: [StoreKey: PropertyListValue], problem: String?
    ) {
        guard let configuration else { return ([:], nil) }
        guard case .dictionary(let entries)? = PropertyListValue(foundationObject: configuration) else {
            return (
                [:],
                "\(managedConfigurationKey) is not a dictionary of property-list values; nothing is locked"
            )
        }
        return (Dictionary(uniqueKeysWithValues: entries.map { (StoreKey($0.key), $0.value) }), nil)
    }

    /// The directories searched for system files, from the environment (see ``SystemLayer``):
    /// `["/etc/xdg/prefs", "/etc/prefs"]` by default on Linux, none on Apple platforms.
    package static func directories(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String] {
        if let list = environment["PREFS_SYSTEM_DIRS"], !list.isEmpty {
            return list.split(separator: ":").map(String.init)
        }
        #if canImport(Darwin)
            // Linux's administrator folders are not an app's to look at (the privacy manifest's
            // C617.1 covers the app's own containers only): Apple's administrator layer is
            // managed preferences, `managed(_:)`.
            return []
        #else
            let xdg = environment["XDG_CONFIG_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/xdg"
            return xdg.split(separator: ":").map { "\($0)/prefs" } + ["/etc/prefs"]
        #endif
    }

    /// The value an administrator locked `key` to, if any.
    package func lockedValue(forKey key: String) -> PropertyListValue? {
        switch source {
        case .file: return state.withLock { $0.locked[StoreKey(key)] }
        case .managed(let defaults):
            #if os(macOS)
                guard defaults.objectIsForced(forKey: key), let object = defaults.object(forKey: key) else {
                    return nil
                }
                return PropertyListValue(foundationObject: object)
            #else
                // The entry alone: a read converts one value, not the whole configuration.
                guard let entries = defaults.dictionary(forKey: Self.managedConfigurationKey),
                    let index = entries.index(forKey: key), StoreKey(entries[index].key) == StoreKey(key)
                else { return nil }
                return PropertyListValue(foundationObject: entries[index].value)
            #endif
        }
    }

    /// The default an administrator gave `key` (used when the user stored nothing), if any.
    package func defaultValue(forKey key: String) -> PropertyListValue? {
        state.withLock { $0.defaults[StoreKey(key)] }
    }

    /// Every locked key and its value (a file's, or the managed app configuration's; macOS's
    /// forced keys cannot be listed).
    package var lockedValues: [StoreKey: PropertyListValue] {
        switch source {
        case .file: return state.withLock { $0.locked }
        case .managed(let defaults): return Self.managedConfiguration(in: defaults).locked
        }
    }

    /// Every system default.
    package var defaultValues: [StoreKey: PropertyListValue] { state.withLock { $0.defaults } }

    /// Calls `handler` with the layer's changed values (each key's new locked value, else its new
    /// system default, `.removed` when neither remains) after the file changes, until the
    /// observation ends; the file is looked at every ``pollInterval`` while anyone observes.
    ///
    /// ```swift
    /// let layer = SystemLayer(domain: "com.example.app")
    /// let observation = layer.observe { change in print(change.values.keys) }
    /// ```
    /// `problems`, when given, is called with the reason each time the file, read again, gives no
    /// values for a reason it did not before (a configuration tool wrote a file that is not such
    /// a plist): nothing else would say so, since the values simply go.
    package func observe(
        _ handler: @escaping @Sendable (StoreChange) -> Void,
        problems: (@Sendable (String) -> Void)? = nil
    ) -> StoreObservation {
        let added = observers.add(handler)
        let problemNumber: UInt64? = problems.map { problems in
            problemHandlers.withLock { registry in
                defer { registry.next += 1 }
                registry.handlers[registry.next] = problems
                return registry.next
            }
        }
        let observation = StoreObservation(onCancel: { [weak self] in
            added.cancel()
            if let problemNumber {
                self?.problemHandlers.withLock { _ = $0.handlers.removeValue(forKey: problemNumber) }
            }
        })
        guard case .file(let path?) = source else { return observation }
        poll.withLock { timer in
            guard timer == nil else { return }
            let created = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            created.schedule(
                deadline: .now() + Self.pollInterval.timeInterval, repeating: Self.pollInterval.timeInterval,
                leeway: .milliseconds(100))
            created.setEventHandler { [weak self] in self?.lookAtFile(path) }
            created.resume()
            timer = PollTimer(source: created)
        }
        return StoreObservation(onCancel: { [weak self] in
            observation.cancel()
            guard let self, observers.count == 0 else { return }
            poll.withLock { timer in
                timer?.source.cancel()
                timer = nil
            }
        })
    }

    private func lookAtFile(_ path: String) {
        let before = problem
        let changed = reload()
        if let found = problem, found != before {
            for handler in problemHandlers.withLock({ Array($0.handlers.values) }) { handler(found) }
        }
        guard !changed.isEmpty else { return }
        var values: [StoreKey: ValueChange] = [:]
        for key in changed {
            values[key] = ValueChange(lockedValue(forKey: key.name) ?? defaultValue(forKey: key.name))
        }
        observers.publish(StoreChange(values: values))
    }

    deinit {
        poll.withLock { $0?.source.cancel() }
    }

    /// Reads the file again when it was replaced or changed since it was last read; returns the
    /// keys whose locked value or system default changed (empty when nothing did).
    ///
    /// ```swift
    /// let layer = SystemLayer(domain: "com.example.app")
    /// let changed = layer.reload()
    /// ```
    @discardableResult
    package func reload() -> Set<StoreKey> {
        guard case .file(let path?) = source else { return [] }
        let stamp = FileStamp(path: path)
        return state.withLock { contents in
            guard stamp != contents.stamp || stamp == nil else { return [] }
            var next = Self.read(path)
            next.stamp = stamp
            var changed: Set<StoreKey> = []
            for key in Set(contents.locked.keys).union(next.locked.keys)
            where contents.locked[key] != next.locked[key] {
                changed.insert(key)
            }
            for key in Set(contents.defaults.keys).union(next.defaults.keys)
            where contents.defaults[key] != next.defaults[key] {
                changed.insert(key)
            }
            contents = next
            return changed
        }
    }

    /// The layer's contents from the file at `path`, or why there are none.
    private static func read(_ path: String) -> Contents {
        guard let data = FileManager.default.contents(atPath: path) else {
            return Contents(
                problem: FileManager.default.fileExists(atPath: path) ? "\(path) cannot be read" : nil)
        }
        guard let object = try? PropertyListSerialization.propertyList(from: data, format: nil),
            case .dictionary(let top)? = PropertyListValue(foundationObject: object)
        else {
            return Contents(problem: "\(path) is not a property list dictionary; no system values apply")
        }
        var contents = Contents()
        for (part, value) in top {
            guard part == "defaults" || part == "locked", case .dictionary(let entries) = value else {
                contents.problem =
                    "\(path): \(String(reflecting: part)) is not \"defaults\" or \"locked\" holding a dictionary"
                continue
            }
            let keyed = Dictionary(uniqueKeysWithValues: entries.map { (StoreKey($0.key), $0.value) })
            if part == "defaults" { contents.defaults = keyed } else { contents.locked = keyed }
        }
        return contents
    }
}

/// What identifies a file's contents cheaply: its device, inode, size and modification time.
private struct FileStamp: Equatable {
    let identity: FileIdentity
    let size: Int64
    let modified: Double

    init?(path: String) {
        guard let info = SystemCall.stat(path), let identity = FileIdentity(path: path) else { return nil }
        self.identity = identity
        size = Int64(info.st_size)
        #if canImport(Darwin)
            modified = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
            modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
    }
}
