import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// A value with `depth` arrays around an integer.
private func nested(_ depth: Int) -> PropertyListValue {
    var value = PropertyListValue.integer(1)
    for _ in 0..<depth { value = .array([value]) }
    return value
}

/// A recursive `Codable` value, as deep as it is built.
private indirect enum Chain: Codable, PreferenceValue, Equatable {
    case end
    case link(Chain)

    static func of(length: Int) -> Chain {
        var chain = Chain.end
        for _ in 0..<length { chain = .link(chain) }
        return chain
    }
}

private struct Note: Codable, PreferenceValue, Equatable {
    var text: String
    var optional: String?
    var list: [String]
    var table: [String: String]
}

private struct Mixed: Codable, Equatable {
    var date: Date
    var data: Data
    var small: Int8
    var real: Float
    var flags: [Bool]
    var missing: Int?
    var nested: [String: [Int]]
    var shape: Shape
}

/// Issue "Nothing lost, nothing hung": values a writer accepts are read back by every reader;
/// `Codable` values keep every string.
@Suite struct ValueCodingTests {
    /// Item 4: the deepest value the limit allows is stored and read back by a fresh store.
    @Test(arguments: StoreKind.allCases)
    func theDeepestAllowedValueRoundTrips(kind: StoreKind) throws {
        let store = kind.makeStore()
        let deepest = nested(PropertyListValue.maximumNestingDepth)
        try store.setValue(deepest, forKey: "deep")
        #expect(store.value(forKey: "deep") == deepest)
        if let sqlite = store as? SQLiteStore {
            #expect(try SQLiteStore(path: sqlite.path).value(forKey: "deep") == deepest)
        }
        #if !canImport(Darwin)
            // Foundation on Linux must be able to read its own file back, or the whole domain
            // reads as empty after it reloads (it could not at 512 levels).
            if let defaults = store as? UserDefaultsStore, let suite = defaults.domain {
                let file = try Data(contentsOf: URL(fileURLWithPath: suite + ".plist"))
                #expect((try? PropertyListSerialization.propertyList(from: file, format: nil)) != nil)
            }
        #endif
    }

    /// Item 4: one level deeper is refused by every store with a typed error, and what was stored
    /// stays.
    @Test(arguments: StoreKind.allCases)
    func deeperValuesAreRefusedWhenWritten(kind: StoreKind) throws {
        let store = kind.makeStore()
        try store.setValue(.string("kept"), forKey: "deep")
        let tooDeep = { (error: any Error) in (error as? PreferenceError)?.kind == .nestedTooDeeply }
        #expect {
            try store.setValue(nested(PropertyListValue.maximumNestingDepth + 1), forKey: "deep")
        } throws: { tooDeep($0) }
        #expect {
            try store.transaction { t in
                t["other"] = .integer(1)
                t["deep"] = .dictionary(["a": nested(PropertyListValue.maximumNestingDepth)])
            }
        } throws: { tooDeep($0) }
        #expect(store.value(forKey: "deep") == .string("kept"))
        #expect(store.value(forKey: "other") == nil)
    }

    /// A value too deep written through a handle is the key's encoding error, whether the store
    /// refuses it (Prefs' own stores, which the handle leaves the check to, so a write checks
    /// once) or the handle does (a store of another library, which may check nothing), by
    /// `set` and by `update`; nothing is stored.
    @Test(arguments: StoreKind.allCases.map(Optional.some) + [nil])
    func aValueTooDeepIsTheKeysEncodingErrorWhicheverChecks(kind: StoreKind?) throws {
        let store = kind?.makeStore() ?? UncheckingStore()
        let prefs = IssueRecorder().preferences(store)
        let key = Preferences.Key<PropertyListValue?>("deep")
        let deep = nested(PropertyListValue.maximumNestingDepth + 1)
        let writes: [() throws -> Void] = [
            { try prefs.set(deep, for: key) },
            { try prefs.update { $0[key] = deep } },
        ]
        for write in writes {
            #expect {
                try write()
            } throws: { error in
                guard let error = error as? PreferenceError, error.kind == .nestedTooDeeply else {
                    return false
                }
                return error.key == "deep"
            }
        }
        #expect(store.value(forKey: "deep") == nil)
    }

    /// Item 4: a recursive `Codable` value far deeper than the limit throws instead of
    /// overflowing the stack.
    @Test func aFarTooDeepCodableValueThrows() throws {
        let prefs = IssueRecorder().preferences()
        let key = Preferences.Key<Chain>("chain", default: .end)
        prefs[key] = .of(length: 10)
        #expect(prefs[key] == .of(length: 10))
        #expect {
            try prefs.set(.of(length: 20_000), for: key)
        } throws: { error in
            (error as? PreferenceError)?.kind == .nestedTooDeeply
        }
        #expect(prefs[key] == .of(length: 10))
    }

    /// The same record met by a write, which applies others' records in place holding the
    /// journal's lock (a store nobody observes has no watch looking first): the value is reported
    /// and ignored, the record's other entries applied.
    @Test func aWriteCatchingUpSkipsAndReportsAValueItCannotDecode() async throws {
        let path = TestFiles.uniquePath()
        let recorder = IssueRecorder()
        var options = SQLiteStore.Options(refreshInterval: .seconds(3_600))
        options.diagnostics = recorder.diagnostics
        let store = try SQLiteStore(path: path, options: options)
        // The watch's one look when it starts, done before the record is there (however late).
        #expect(await eventually { store.core.watchLooks.load() == 1 })
        try store.setValue(.string("good"), forKey: "k")
        try store.setValue(.bool(true), forKey: "marker")
        let other = try SQLiteStore(path: path)
        let journal = try #require(other.core.journal)
        try journal.withLock(timeout: .seconds(5)) { locked in
            var record = RecordWriter(sequence: journal.sequence + 1, count: 2)
            record.add(key: "k", value: [0xFF, 0x00])
            record.addRemoval(key: "marker")
            _ = try journal.append(record.sealed(), locked: locked)
            _ = journal.announce(locked: locked)
        }
        #expect(store.core.cache.position < journal.sequence)  // not caught up in the background
        try store.setValue(.integer(1), forKey: "mine")
        #expect(store.value(forKey: "k") == .string("good"))
        #expect(store.value(forKey: "marker") == nil)
        #expect(recorder.issues.contains { "\($0)".contains("cannot decode the values of [\"k\"]") })
    }

    /// Item 4: a value another process wrote that this release cannot decode (a newer release's)
    /// is reported and ignored, never published as a removal.
    @Test func anUndecodableValueIsNotARemoval() async throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.string("good"), forKey: "k")
        let seen = Locked<[StoreChange]>([])
        let observation = store.observe { change in seen.withLock { $0.append(change) } }
        // What a newer release's write looks like to this one: a record with a value it cannot read.
        let other = try SQLiteStore(path: path)
        let journal = try #require(other.core.journal)
        let wake = try journal.withLock(timeout: .seconds(5)) { locked in
            var record = RecordWriter(sequence: journal.sequence + 1, count: 2)
            record.add(key: "k", value: [0xFF, 0x00])
            record.addRemoval(key: "marker")
            _ = try journal.append(record.sealed(), locked: locked)
            return journal.announce(locked: locked)
        }
        if wake { journal.wakeWatchers() }
        #expect(await eventually { seen.withLock { $0.contains { $0.values["marker"] != nil } } })
        store.observers.waitForDelivery()
        #expect(seen.withLock { $0.allSatisfy { $0.values["k"] == nil } })
        #expect(store.value(forKey: "k") == .string("good"))
        observation.cancel()
    }

    /// Item 5: Foundation's `"$null"` marker is just a string to Prefs, wherever it appears.
    @Test(arguments: StoreKind.allCases)
    func theStringNullSurvivesInCodableValues(kind: StoreKind) throws {
        let prefs = IssueRecorder().preferences(kind.makeStore())
        let key = Preferences.Key<Note>("note", default: Note(text: "", optional: nil, list: [], table: [:]))
        let note = Note(text: "$null", optional: "$null", list: ["$null", "x"], table: ["$null": "$null"])
        prefs[key] = note
        #expect(prefs[key] == note)
    }

    /// Item 5: the encoder writes what Foundation's `PropertyListEncoder` writes, so values stored
    /// by earlier releases read back unchanged.
    @Test func codableValuesKeepFoundationsStoredForm() throws {
        let value = Mixed(
            date: Date(timeIntervalSince1970: 1_700_000_000.5), data: Data([0, 1, 255]), small: -3,
            real: 0.1, flags: [true, false], missing: nil, nested: ["a": [1, 2], "": []],
            shape: .circle(radius: 2))
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let foundation = try PropertyListSerialization.propertyList(
            from: encoder.encode([value]), format: nil)
        let expected = PropertyListValue(foundationObject: foundation)
        #expect(try PropertyListValueEncoder().encode(value).map { .array([$0]) } == expected)
        let ours = try #require(try PropertyListValueEncoder().encode(value))
        #expect(try PropertyListValueDecoder().decode(Mixed.self, from: ours) == value)
    }

    /// Item 5: what a property list cannot hold is a clear error, not a marker string.
    @Test func nilInsideAnArrayIsAnError() throws {
        #expect {
            _ = try PropertyListValueEncoder().encode([1, nil, 3] as [Int?])
        } throws: { error in
            "\(error)".contains("nil inside an array")
        }
    }
}

/// A store of another library: values in a dictionary, and no check of their nesting.
private final class UncheckingStore: PreferenceStore {
    private let values = Locked<[String: PropertyListValue]>([:])
    var description: String { "UncheckingStore" }

    func value(forKey key: String) -> PropertyListValue? { values.withLock { $0[key] } }
    func snapshot() -> [StoreKey: PropertyListValue] {
        values.withLock { Dictionary(uniqueKeysWithValues: $0.map { (StoreKey($0.key), $0.value) }) }
    }
    func transaction<Result>(_ body: (inout StoreTransaction) throws -> Result) throws -> Result {
        try values.withLock { values in
            let current = values
            var transaction = StoreTransaction(read: { current[$0] }, keys: { Array(current.keys) })
            let result = try body(&transaction)
            for (key, change) in transaction.writes { values[key.name] = change.newValue }
            return result
        }
    }
    func observe(_ handler: @escaping @Sendable (StoreChange) -> Void) -> StoreObservation {
        StoreObservation {}
    }
}
