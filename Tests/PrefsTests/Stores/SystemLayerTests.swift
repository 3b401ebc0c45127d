import Foundation
import Observation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Keys the program declares are known outside it", items 6 and 8: an administrator's
/// layer under a domain, with defaults that replace the code's and locked values no write changes.
@Suite(.timeLimit(.minutes(10))) struct SystemLayerTests {
    /// A folder holding `<domain>.plist` with `text`.
    static func systemFolder(_ domain: String, _ text: String) throws -> String {
        let folder = TestFiles.folder.appendingPathComponent("system-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: "\(folder)/\(domain).plist"))
        return folder
    }

    /// An XML property list of `value`, as an administrator writes one (`plutil -convert xml1`).
    static func xml(_ value: PropertyListValue) throws -> String {
        String(
            decoding: try PropertyListSerialization.data(
                fromPropertyList: value.foundationObject, format: .xml, options: 0),
            as: UTF8.self)
    }

    static let volume = Preferences.Key<Double>("volume", default: 0.5)
    static let theme = Preferences.Key<String>("theme", default: "light")

    @Test func lockedValuesWinAndSystemDefaultsReplaceTheCodes() throws {
        let folder = try Self.systemFolder(
            "app",
            try Self.xml(
                .dictionary([
                    "defaults": .dictionary(["volume": .double(0.3)]),
                    "locked": .dictionary(["theme": .string("dark")]),
                ])))
        let layer = SystemLayer(domain: "app", directories: ["/nonexistent", folder])
        #expect(layer.path == "\(folder)/app.plist" && layer.problem == nil)
        let prefs = Preferences(store: MemoryStore(), system: layer)
        #expect(prefs[Self.volume] == 0.3, "the system default replaces the code's")
        prefs[Self.volume] = 0.9
        #expect(prefs[Self.volume] == 0.9, "the user's value replaces the system default")

        #expect(prefs.isLocked(Self.theme) && !prefs.isLocked(Self.volume))
        try prefs.store.setValue(.string("light"), forKey: "theme")  // stored before the lock
        #expect(prefs[Self.theme] == "dark")
        #expect {
            try prefs.set("blue", for: Self.theme)
        } throws: { error in
            guard let error = error as? PreferenceError, error.kind == .locked else { return false }
            return error.message.contains("(\(folder)/app.plist)") && error.description.contains("locked")
        }
        #expect(throws: PreferenceError.self) { try prefs.update { p in p[Self.theme] = "blue" } }
        #expect(try prefs.update { p in p[Self.theme] } == "dark")
        #expect(prefs.store.value(forKey: "theme") == .string("light"), "nothing was written")
    }

    @Test func aFileThatIsNotALayerGivesNoValuesAndSaysWhy() throws {
        let recorder = IssueRecorder()
        let notAPlist = SystemLayer(domain: "app", directories: [try Self.systemFolder("app", "{ unclosed")])
        #expect(notAPlist.problem?.contains("not a property list") == true)
        let prefs = Preferences(store: MemoryStore(), diagnostics: recorder.diagnostics, system: notAPlist)
        #expect(prefs[Self.volume] == 0.5)
        #expect(recorder.issues.count == 1)
        let wrongShape = SystemLayer(
            domain: "app", directories: [try Self.systemFolder("app", "{ locked = 3; }")])
        #expect(wrongShape.problem?.contains("\"locked\"") == true && wrongShape.lockedValues.isEmpty)
    }

    /// Given as a dictionary, not with `setenv`: changing the process's environment while other
    /// tests start processes (which read it) made Foundation's `Process.run` crash in `memcpy`.
    @Test func theDirectoriesComeFromTheEnvironment() {
        let xdg = ["XDG_CONFIG_DIRS": "/opt/a:/opt/b"]
        #expect(SystemLayer.directories(environment: xdg) == ["/opt/a/prefs", "/opt/b/prefs", "/etc/prefs"])
        #expect(
            SystemLayer.directories(environment: xdg.merging(["PREFS_SYSTEM_DIRS": "/srv/prefs"]) { $1 })
                == ["/srv/prefs"])
        #expect(SystemLayer.directories(environment: [:]) == ["/etc/xdg/prefs", "/etc/prefs"])
    }

    @Test func aReplacedSystemFileIsAChangeObserversSee() async throws {
        let folder = try Self.systemFolder("app", "{ locked = { theme = dark; }; }")
        let prefs = Preferences(
            store: MemoryStore(), system: SystemLayer(domain: "app", directories: [folder]))
        let seen = Locked<[String]>([])
        let observation = prefs.observe(Self.theme, initial: false) { theme in
            seen.withLock { $0.append(theme) }
        }
        // A configuration tool writes a new file and renames it over the old one.
        try Data(#"{ locked = { theme = solarized; }; }"#.utf8).write(
            to: URL(fileURLWithPath: "\(folder)/app.plist"), options: .atomic)
        #expect(await eventually { seen.withLock { $0 } == ["solarized"] }, "\(seen.withLock { $0 })")
        #expect(prefs[Self.theme] == "solarized")
        observation.cancel()
    }

    /// A file replaced by one that is not such a plist, while the layer is observed, is reported
    /// to the diagnostics (its values go, and nothing else would say why).
    @Test func aSystemFileReplacedByAnUnreadableOneIsReported() async throws {
        let folder = try Self.systemFolder("app", "{ locked = { theme = dark; }; }")
        let recorder = IssueRecorder()
        let prefs = Preferences(
            store: MemoryStore(), diagnostics: recorder.diagnostics,
            system: SystemLayer(domain: "app", directories: [folder]))
        let observation = prefs.observe(Self.theme) { _ in }
        #expect(recorder.issues.isEmpty)
        try Data("not a property list {".utf8).write(
            to: URL(fileURLWithPath: "\(folder)/app.plist"), options: .atomic)
        let reported = await eventually {
            recorder.issues.contains { "\($0)".contains("is not a property list dictionary") }
        }
        #expect(reported, "\(recorder.issues)")
        #expect(prefs[Self.theme] == "light", "the locked value went with the file")
        observation.cancel()
    }

    /// `@Pref` (and a group) announce a replaced system file to Observation, as any other change.
    @Test func aPrefPropertySeesTheSystemFileReplaced() async throws {
        let folder = try Self.systemFolder("app", "{ locked = { theme = dark; }; }")
        let prefs = Preferences(
            store: MemoryStore(), system: SystemLayer(domain: "app", directories: [folder]))
        let theme = Pref(Self.theme, in: prefs)
        #expect(theme.wrappedValue == "dark")
        let announced = Locked(0)
        withObservationTracking {
            _ = theme.wrappedValue
        } onChange: {
            announced.withLock { $0 += 1 }
        }
        try Data(#"{ locked = { theme = solarized; }; }"#.utf8).write(
            to: URL(fileURLWithPath: "\(folder)/app.plist"), options: .atomic)
        #expect(await eventually { announced.withLock { $0 } == 1 })
        #expect(theme.wrappedValue == "solarized")
    }
}

/// Every observation entry point sees the administrator's layer change (its file replaced: a new
/// system default, a new lock), as it sees the store change, and says the value now in effect.
@Suite(.timeLimit(.minutes(10))) struct SystemLayerObservationTests {
    private static let volume = Preferences.Key<Double>("volume", default: 0.5)
    private static let theme = Preferences.Key<String>("theme", default: "light")

    /// A store with `theme` stored and nothing for `volume`, under a layer with a volume default
    /// of 0.3 and nothing locked; `replace` gives the layer a volume default of 0.2 and locks
    /// `theme` to "dark".
    private struct Setup {
        let prefs: Preferences
        let folder: String

        init() throws {
            let first = try SystemLayerTests.xml(
                .dictionary(["defaults": .dictionary(["volume": .double(0.3)])]))
            folder = try SystemLayerTests.systemFolder("app", first)
            prefs = Preferences(
                store: MemoryStore(), system: SystemLayer(domain: "app", directories: [folder]))
            prefs[SystemLayerObservationTests.theme] = "solarized"
        }

        func replace() throws {
            let second = try SystemLayerTests.xml(
                .dictionary([
                    "defaults": .dictionary(["volume": .double(0.2)]),
                    "locked": .dictionary(["theme": .string("dark")]),
                ]))
            try Data(second.utf8).write(to: URL(fileURLWithPath: "\(folder)/app.plist"), options: .atomic)
        }
    }

    private static let expected = StoreChange(values: [
        "volume": .set(.double(0.2)), "theme": .set(.string("dark")),
    ])

    @Test func severalKeysUntyped() async throws {
        let setup = try Setup()
        let seen = Locked<[StoreChange]>([])
        let observation = setup.prefs.observeChanges(to: [Self.volume, Self.theme]) { (change: StoreChange) in
            seen.withLock { $0.append(change) }
        }
        try setup.replace()
        #expect(await eventually { seen.withLock { $0 } == [Self.expected] }, "\(seen.withLock { $0 })")
        observation.cancel()
    }

    @Test func severalKeysTyped() async throws {
        let setup = try Setup()
        let seen = Locked<[String]>([])
        let observation = setup.prefs.observe(Self.volume, Self.theme, initial: false) { volume, theme in
            seen.withLock { $0.append("\(volume) \(theme)") }
        }
        try setup.replace()
        #expect(await eventually { seen.withLock { $0 } == ["0.2 dark"] }, "\(seen.withLock { $0 })")
        observation.cancel()
    }

    @Test func allKeys() async throws {
        let setup = try Setup()
        let seen = Locked<[StoreChange]>([])
        let observation = setup.prefs.observeAllChanges { change in seen.withLock { $0.append(change) } }
        try setup.replace()
        #expect(await eventually { seen.withLock { $0 } == [Self.expected] }, "\(seen.withLock { $0 })")
        observation.cancel()
    }

    @Test func streams() async throws {
        let setup = try Setup()
        var all = setup.prefs.allChanges().makeAsyncIterator()
        var pair = setup.prefs.changes(of: Self.volume, Self.theme).makeAsyncIterator()
        var one = setup.prefs.changes(of: Self.volume).makeAsyncIterator()
        #expect(await pair.next().map { "\($0.0) \($0.1)" } == "0.3 solarized")
        #expect(await one.next() == 0.3)
        try setup.replace()
        #expect(await all.next() == Self.expected)
        #expect(await pair.next().map { "\($0.0) \($0.1)" } == "0.2 dark")
        #expect(await one.next() == 0.2)
    }

    /// A stored value hides the layer's default: a new default for that key changes nothing in
    /// effect, and nothing is announced for it.
    @Test func aDefaultHiddenByAStoredValueIsNoChange() async throws {
        let setup = try Setup()
        setup.prefs[Self.volume] = 0.9
        let seen = Locked<[StoreChange]>([])
        let observation = setup.prefs.observeChanges(to: [Self.volume, Self.theme]) { (change: StoreChange) in
            seen.withLock { $0.append(change) }
        }
        try setup.replace()
        #expect(
            await eventually {
                seen.withLock { $0 } == [StoreChange(values: ["theme": .set(.string("dark"))])]
            },
            "\(seen.withLock { $0 })")
        observation.cancel()
    }
}
