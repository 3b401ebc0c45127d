import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// The stores every value must round-trip through, each made fresh for one test.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case userDefaults
    case sqlite

    var testDescription: String { rawValue }

    func makeStore() -> any PreferenceStore {
        switch self {
        case .memory: MemoryStore()
        case .userDefaults: TestDefaults.makeStore()
        case .sqlite: try! SQLiteStore(path: TestFiles.uniquePath())
        }
    }
}

/// Fresh file paths in a folder of this test process.
enum TestFiles {
    /// The package's own folder (the one holding `Package.swift`), found from this file's path, so
    /// a test finds the repository's files wherever its own file sits.
    static let repository: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/"
            && !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path)
        {
            folder.deleteLastPathComponent()
        }
        return folder
    }()

    static let folder: URL = {
        ScratchFolder.make("sqlite-tests")
    }()

    static func uniquePath(_ name: String = "prefs") -> String {
        folder.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
    }
}

/// Fresh `UserDefaults` suites, kept out of the user's real configuration folder.
///
/// Foundation on Linux reads `XDG_CONFIG_HOME` once, at launch, so setting it here would be too
/// late; a suite named by an absolute path is kept in that file instead (`<path>.plist`).
/// Helper processes are given their own `XDG_CONFIG_HOME` when they start.
enum TestDefaults {
    static let folder: URL = {
        ScratchFolder.make("defaults-tests")
    }()

    static func uniqueSuiteName() -> String {
        folder.appendingPathComponent("prefs.tests.\(UUID().uuidString)").path
    }

    static func makeStore() -> UserDefaultsStore {
        let suite = uniqueSuiteName()
        return UserDefaultsStore(UserDefaults(suiteName: suite)!, domain: suite)
    }
}

/// Diagnostics that remember what they were told, for one test.
final class IssueRecorder: Sendable {
    private let recorded = Locked<[PreferenceIssue]>([])

    var issues: [PreferenceIssue] { recorded.withLock { $0 } }

    var diagnostics: PreferenceDiagnostics {
        PreferenceDiagnostics { [self] issue in recorded.withLock { $0.append(issue) } }
    }

    func preferences(_ store: any PreferenceStore = MemoryStore()) -> Preferences {
        Preferences(store: store, diagnostics: diagnostics)
    }
}

/// A store whose writes fail, to check that failures are reported and change nothing.
final class FailingStore: PreferenceStore {
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "no space left on device" }
    }

    let backing: MemoryStore
    var description: String { "FailingStore" }

    init(_ initial: [StoreKey: PropertyListValue] = [:]) {
        backing = MemoryStore(initial)
    }

    func value(forKey key: String) -> PropertyListValue? { backing.value(forKey: key) }
    func snapshot() -> [StoreKey: PropertyListValue] { backing.snapshot() }
    func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try backing.transaction { transaction in
            _ = try body(&transaction)
            throw DiskFull()
        }
    }
    func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        backing.observe(handler)
    }
}

#if os(macOS) || os(Linux)
    /// Runs the PrefsTestHelper executable, built into the same products folder as the tests.
    enum Helper {
        static var executable: URL { Products.executable("PrefsTestHelper") }

        /// Starts the helper; `configHome` becomes its `XDG_CONFIG_HOME`.
        static func start(_ arguments: [String], configHome: URL? = nil) throws -> ChildProcess {
            try ChildProcess.start(
                executable, arguments, environment: configHome.map { ["XDG_CONFIG_HOME": $0.path] } ?? [:])
        }

        static func run(_ arguments: [String], configHome: URL? = nil) throws -> ChildOutput {
            try start(arguments, configHome: configHome).finish()
        }

        static func temporaryFolder() throws -> URL {
            ScratchFolder.make("helper")
        }
    }
#endif

/// Two handles on one store, each reporting to its own recorder: `direct`, as an app makes it
/// (typed reads may take a store's direct path), and `general`, under an empty administrator's
/// layer, whose every read takes the general path (a `PropertyListValue`, then the key's type).
struct DirectAndGeneralReads {
    let directIssues = IssueRecorder()
    let generalIssues = IssueRecorder()
    let direct: Preferences
    let general: Preferences
    /// How many reads of each handle were compared.
    let compared = Locked(0)

    init(_ store: any PreferenceStore, domain: String) {
        direct = directIssues.preferences(store)
        general = Preferences(
            store: store, diagnostics: generalIssues.diagnostics,
            system: SystemLayer(domain: domain, directories: []))
    }

    /// Expects both handles to read `key` alike, `times` times in a row.
    func expectSame<Value: PreferenceValue & Equatable>(
        _ key: Preferences.Key<Value>, times: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for _ in 0..<times {
            #expect(
                direct[key] == general[key], "\(key.name) as \(Value.self)", sourceLocation: sourceLocation)
            compared.withLock { $0 += 1 }
        }
    }

    /// Expects both handles to have reported the same issues, at least `count` of them.
    func expectSameReports(atLeast count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            directIssues.issues.map(\.description) == generalIssues.issues.map(\.description),
            sourceLocation: sourceLocation)
        #expect(
            directIssues.issues.count >= count, "the values of other types were reported",
            sourceLocation: sourceLocation)
    }
}
