import Foundation
import Prefs
import PrefsTestSupport
import Testing

@Suite struct ErrorHandlingTests {
    @Test(arguments: StoreKind.allCases)
    func typeMismatchGivesTheDefaultAndIsReported(store: StoreKind) throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(store.makeStore())
        try prefs.store.setValue(.string("loud"), forKey: "volume")

        #expect(prefs[.volume] == 0.5)
        let issue = try #require(issues.issues.first)
        #expect(issue.key == "volume")
        guard case .readFellBackToDefault(let cause) = issue.kind else {
            Issue.record("unexpected kind \(issue.kind)")
            return
        }
        #expect(cause.kind == .typeMismatch)
        #expect(cause.message == "expected Double, found \(PropertyListValue.string("loud"))")
        #expect(issue.description.contains("\"volume\""))
        // The stored value is left alone: a read never writes.
        #expect(prefs.store.value(forKey: "volume") == .string("loud"))
    }

    @Test(arguments: [
        PropertyListValue.string("purple"),  // not a case
        .bool(true),  // not a string, number or dictionary at all
        .dictionary(["name": .string("x")]),  // Codable with missing fields
        .array([.integer(1), .string("x")]),  // an element of another type
        .integer(300),  // out of range for Int8
        .double(1.5),  // not a whole number for Int
    ])
    func undecodableValuesGiveTheDefault(stored: PropertyListValue) throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(MemoryStore(["k": stored]))
        #expect(prefs[Preferences.Key<Theme>("k", default: .system)] == .system)
        #expect(prefs[Preferences.Key<Profile>("k", default: .guest)] == .guest)
        #expect(prefs[Preferences.Key<[Int]>("k", default: [7])] == [7])
        #expect(prefs[Preferences.Key<Int8>("k", default: 7)] == 7)
        #expect(prefs[Preferences.Key<Int>("k", default: 7)] == (stored == .integer(300) ? 300 : 7))
        #expect(issues.issues.count >= 4)
        #expect(issues.issues.allSatisfy { $0.key == "k" })
    }

    @Test func integersAndRealsConvertOnlyWhenExact() {
        let prefs = IssueRecorder().preferences(MemoryStore(["whole": .double(4), "count": .integer(3)]))
        #expect(prefs[Preferences.Key<Int>("whole", default: 0)] == 4)
        #expect(prefs[Preferences.Key<Double>("count", default: 0)] == 3)
        #expect(prefs[Preferences.Key<Bool>("count", default: false)] == false, "an integer is not a Boolean")
    }

    @Test(arguments: StoreKind.allCases)
    func unsupportedValuesThrowAndWriteNothing(store: StoreKind) throws {
        let issues = IssueRecorder()
        let prefs = issues.preferences(store.makeStore())
        let counter = Preferences.Key<Refusing>("counter", default: Refusing(value: 0))
        try prefs.set(Refusing(value: 42), for: counter)

        #expect {
            try prefs.set(Refusing(value: -1), for: counter)
        } throws: { error in
            guard let error = error as? PreferenceError, error.kind == .notRepresentable else { return false }
            return error.key == "counter" && error.description.contains("negative values are refused")
        }
        #expect(prefs[counter] == Refusing(value: 42))

        let holes = Preferences.Key<[Int?]>("holes", default: [])
        #expect(throws: PreferenceError.self) { try prefs.set([1, nil], for: holes) }
        #expect(!prefs.hasValue(for: holes))

        // The subscript setter cannot throw: it reports, and the stored value stays.
        prefs[counter] = Refusing(value: -1)
        #expect(prefs[counter] == Refusing(value: 42))
        let issue = try #require(issues.issues.last)
        guard case .writeLost(let error as PreferenceError) = issue.kind else {
            Issue.record("expected a value's write failure, got \(issue.kind)")
            return
        }
        #expect(error.key == "counter")
    }

    @Test func failingStoreWritesThrowWithContextAndKeepTheOldValue() throws {
        let issues = IssueRecorder()
        let store = FailingStore(["volume": .double(0.3)])
        let prefs = issues.preferences(store)

        // The store's own error, as it threw it: caught by its type.
        #expect(throws: FailingStore.DiskFull.self) { try prefs.set(0.9, for: .volume) }
        #expect(prefs[.volume] == 0.3)

        prefs[.volume] = 0.9
        #expect(prefs[.volume] == 0.3)
        prefs.reset(.volume)
        prefs.removeAll()
        #expect(prefs[.volume] == 0.3)
        #expect(issues.issues.count == 3)
        #expect(issues.issues.allSatisfy { if case .writeLost = $0.kind { true } else { false } })
        #expect(issues.issues[0].description.contains("no space left on device"))
        #expect(issues.issues[0].description.contains("\"volume\""), "names the key")
    }

    #if os(macOS) || os(Linux)
        /// One place for diagnostics, chosen once for the process.
        ///
        /// After `PreferenceDiagnostics.bootstrap`, a store's notices
        /// (a damaged file moved aside) and a handle's (a value read as the default) both go
        /// there, not to standard error (a SQLite store's own sink used to be standard error
        /// whatever the handle was given). In a process of its own: the choice is the process's.
        @Test func bootstrapIsTheOnePlaceEveryStoreAndHandleReportsTo() throws {
            let path = TestFiles.uniquePath("bootstrap")
            let output = try Helper.run(["bootstrap-diagnostics", path])
            #expect(output.status == 0, "\(output.stderr)")
            let lines = output.stdout.split(separator: "\n").map(String.init)
            #expect(
                lines.contains { $0.hasPrefix("diag:") && $0.contains("moved it to") }, "\(output.stdout)")
            // The damaged file's notice names its path once (it said "PATH: PATH: not a …").
            let moved = lines.first { $0.contains("moved it to") } ?? ""
            #expect(moved.components(separatedBy: path + ":").count == 2, "\(moved)")
            #expect(lines.contains { $0.hasPrefix("diag:") && $0.contains("\"volume\"") }, "\(output.stdout)")
            #expect(!output.stderr.contains("prefs:"), "nothing on standard error: \(output.stderr)")
            #expect(!output.stdout.contains("Error Domain="), "no dump of Foundation's error")
        }

        /// A store that cannot make its folder says why in words, the path once, no dump.
        @Test func aFolderThatCannotBeMadeIsSaidInWords() throws {
            let file = TestFiles.uniquePath("a-file")
            try Data("x".utf8).write(to: URL(fileURLWithPath: file))
            #expect {
                try SQLiteStore(path: file + "/sub/prefs.sqlite")
            } throws: { error in
                let message = "\(error)"
                return message.contains("Not a directory") && !message.contains("Error Domain=")
            }
        }

        /// The catch that ``StoreError``'s documentation shows, around `set`, matches: a store's
        /// failure is thrown as the store's error, naming the key, not wrapped in another type.
        @Test func aBusyStoreIsCaughtAsTheDocsShow() async throws {
            let path = TestFiles.uniquePath()
            _ = try SQLiteStore(path: path)
            let holder = try Helper.start(["sqlite-hold-lock", path])
            defer { holder.killIfRunning() }
            #expect(await eventually { holder.currentStdout.contains("holding") })
            var options = SQLiteStore.Options()
            options.lockTimeout = .milliseconds(100)
            let prefs = Preferences(store: try SQLiteStore(path: path, options: options))
            var caught: StoreError?
            do {
                try prefs.set(0.8, for: .volume)
            } catch let error as StoreError where error.kind == .busy {
                caught = error
            }
            #expect(caught?.keys == ["volume"])
            #expect(caught?.storeDescription == path)
        }
    #endif

    @Test func oncePerKeyPassesEachKeyAndKindOnce() {
        let issues = IssueRecorder()
        let prefs = Preferences(
            store: MemoryStore(["volume": .string("x"), "theme": .integer(1)]),
            diagnostics: .oncePerKey(issues.diagnostics.report))
        for _ in 0..<3 {
            #expect(prefs[.volume] == 0.5)
            #expect(prefs[.theme] == .system)
        }
        prefs[Preferences.Key<[Int?]>("volume", default: [])] = [nil]
        #expect(issues.issues.map(\.key) == ["volume", "theme", "volume"])
        // Every lost write is told: each was a value the program meant to keep (the newcomer
        // trial wrote 5, 6 and 7 to a key accepting 0...1 and saw one line).
        prefs[Preferences.Key<[Int?]>("volume", default: [])] = [nil]
        prefs[Preferences.Key<[Int?]>("volume", default: [])] = [nil]
        #expect(issues.issues.map(\.key) == ["volume", "theme", "volume", "volume", "volume"])
    }
}

/// A value whose encoding refuses negative numbers: a write that cannot be encoded.
private struct Refusing: Codable, PreferenceValue, Equatable {
    var value: Int

    init(value: Int) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        guard value >= 0 else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: encoder.codingPath, debugDescription: "negative values are refused"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(Int.self)
    }
}
