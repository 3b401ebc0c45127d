import Foundation
import Prefs
import PrefsTestSupport
import Testing

/// One value to write and read back through a store, exactly.
struct RoundTrip: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let check: @Sendable (Preferences) throws -> Void

    static func of<Value: PreferenceValue & Equatable>(
        _ name: String, _ value: Value, default defaultValue: Value
    ) -> RoundTrip {
        RoundTrip(testDescription: name) { prefs in
            let key = Preferences.Key<Value>("roundTrip.\(name)", default: defaultValue)
            #expect(prefs[key] == defaultValue, "nothing stored yet: the default shows")
            try prefs.set(value, for: key)
            #expect(prefs[key] == value)
            // A second handle on the same store reads what the first wrote.
            #expect(Preferences(store: prefs.store, diagnostics: prefs.diagnostics)[key] == value)
            prefs.reset(key)
            #expect(prefs[key] == defaultValue)
            // The subscript setter stores too.
            prefs[key] = value
            #expect(prefs[key] == value)
        }
    }

    static let all: [RoundTrip] = [
        .of("bool.true", true, default: false),
        .of("bool.false", false, default: true),
        .of("int.min", Int.min, default: 0),
        .of("int.max", Int.max, default: 0),
        .of("int8", Int8.min, default: 0),
        .of("int16", Int16.max, default: 0),
        .of("int32", Int32.min, default: 0),
        .of("int64", Int64.max, default: 0),
        .of("uint", UInt(Int64.max), default: 0),
        .of("uint8", UInt8.max, default: 0),
        .of("uint16", UInt16.max, default: 0),
        .of("uint32", UInt32.max, default: 0),
        .of("uint64", UInt64(Int64.max), default: 0),
        .of("float", Float(0.1), default: 0),
        .of("float.max", Float.greatestFiniteMagnitude, default: 0),
        .of("double.pi", Double.pi, default: 0),
        .of("double.tiny", Double.leastNonzeroMagnitude, default: 0),
        .of("double.infinity", -Double.infinity, default: 0),
        .of("string.empty", "", default: "x"),
        .of("string.unicode", "héllo 🌍 中文", default: ""),
        .of("string.control", "a\u{0}b\u{1}c\td\n", default: ""),
        // Whole seconds: Foundation's UserDefaults on Linux keeps no more (see the test below).
        .of("date", Date(timeIntervalSince1970: 1_700_000_000), default: .distantPast),
        .of("date.distantFuture", Date.distantFuture, default: .distantPast),
        .of("data.empty", Data(), default: Data([1])),
        .of("data.bytes", Data((0...255).map(UInt8.init)), default: Data()),
        .of("url.https", URL(string: "https://example.com/a?b=c#d")!, default: URL(string: "about:blank")!),
        .of("url.file", URL(fileURLWithPath: "/tmp/a b/c.txt"), default: URL(string: "about:blank")!),
        .of("uuid", UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, default: UUID()),
        .of("array.int", [1, 2, 3], default: []),
        .of("array.url", [URL(string: "https://a.example")!, URL(string: "mailto:a@b.c")!], default: []),
        .of("array.nested", [["a": 1], ["b": 2]], default: []),
        .of("dictionary", ["volume": 0.5, "balance": -1], default: [:]),
        .of("dictionary.dates", ["x": [Date(timeIntervalSince1970: 5)]], default: [:]),
        .of("optional.some", String?.some("Zhuo"), default: nil),
        .of("optional.int", Int?.some(0), default: nil),
        .of("raw.string", Theme.dark, default: .system),
        .of("raw.int", Level.high, default: .low),
        .of(
            "codable.struct",
            Profile(
                name: "Zhuo", age: 30, nickname: "Z", joined: .init(timeIntervalSince1970: 9), tags: ["a"]),
            default: .guest),
        .of("codable.enum", Shape.circle(radius: 2.5), default: .square(side: 1)),
        .of("bridged", RGB(red: 1, green: 2, blue: 255), default: RGB(red: 0, green: 0, blue: 0)),
        .of(
            "plist", PropertyListValue.dictionary(["a": .array([.bool(true), .integer(-1)])]),
            default: .bool(false)),
        // Issue "Everything a Defaults user reaches for", item 2.
        .of("set.int", Set([3, 1, 2]), default: []),
        .of("set.string", Set(["b", "a", "é"]), default: ["x"]),
        .of("range.closed", ClosedRange(uncheckedBounds: (-5, 10)), default: 0...0),
        .of("range.half-open", 0.25..<0.75, default: 0..<1),
        .of("range.empty", 3..<3, default: 0..<1),
        .of("dictionary.int-keys", [1: "one", -2: "minus two"], default: [:]),
        .of("dictionary.bool-keys", [true: [1, 2], false: []], default: [:]),
        .of("dictionary.double-keys", [0.1: "a tenth", -2.5: "minus"], default: [:]),
        .of("dictionary.character-keys", [Character("é"): 1, "z": 2], default: [:]),
        .of("cgfloat", CGFloat(0.5), default: 0),
        .of("array.of-sets", [Set([1]), Set([2, 3])], default: []),
        .of("array.of-ranges", [1...2, 5...9], default: []),
        .of("dictionary.of-sets", [7: Set(["a"])], default: [:]),
        .of("uint64.max", UInt64.max, default: 0),
        .of("uint.max", UInt.max, default: 0),
        .of("uint64.above-int64", UInt64(Int64.max) + 1, default: 0),
        .of("array.uint64", [UInt64.max, 0, 1 << 63], default: []),
    ]
}

@Suite struct ValueRoundTripTests {
    @Test(arguments: StoreKind.allCases, RoundTrip.all)
    func roundTrips(store: StoreKind, value: RoundTrip) throws {
        let issues = IssueRecorder()
        try value.check(issues.preferences(store.makeStore()))
        #expect(issues.issues.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func optionalNilRemovesTheValue(store: StoreKind) throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let username = Preferences.Key<String?>("username")
        #expect(prefs[username] == nil)
        prefs[username] = "Zhuo"
        #expect(prefs.hasValue(for: username))
        prefs[username] = nil
        #expect(prefs[username] == nil)
        #expect(!prefs.hasValue(for: username))
        #expect(!prefs.storedKeys.contains("username"))
    }

    @Test(arguments: StoreKind.allCases)
    func datesKeepFractionalSecondsWhereTheStoreCan(store: StoreKind) throws {
        let prefs = IssueRecorder().preferences(store.makeStore())
        let when = Preferences.Key<Date?>("when")
        let instant = Date(timeIntervalSince1970: 1_700_000_000.123_456)
        prefs[when] = instant
        prefs.reset(when)  // on Linux, a synchronize() that reloads the domain from its XML plist
        prefs[when] = instant
        // In a collection too: what the store says it holds right after the write is what it
        // reads back from its file later.
        let whens = Preferences.Key<[String: [Date]]>("whens", default: [:])
        prefs[whens] = ["first": [instant]]
        let read = try #require(prefs[when])
        let nested = try #require(prefs[whens]["first"]?.first)
        #if canImport(Darwin)
            #expect(read == instant)
            #expect(nested == instant)
        #else
            if store == .userDefaults {
                // A documented limit of Foundation on Linux: its XML plist keeps whole seconds.
                #expect(read.timeIntervalSince1970 == instant.timeIntervalSince1970.rounded(.down))
                #expect(nested.timeIntervalSince1970 == instant.timeIntervalSince1970.rounded(.down))
            } else {
                #expect(read == instant)
                #expect(nested == instant)
            }
        #endif
    }

    /// Unsigned integers above `Int64.max` have one form in the value model, keep it through the
    /// stored encoding and Foundation's objects, and read as nothing smaller.
    @Test func unsignedIntegersAboveInt64HaveOneForm() throws {
        #expect(try UInt64.serialize(UInt64.max) == .unsignedInteger(UInt64.max))
        #expect(try UInt64.serialize(5) == .integer(5), "what fits Int64 stays .integer")
        #expect(PropertyListValue.integer(unsigned: 7) == .integer(7))
        let big = PropertyListValue.unsignedInteger(UInt64.max)
        #expect(try PropertyListValue(storedEncoding: big.storedEncoding()) == big)
        #expect(PropertyListValue(foundationObject: big.foundationObject) == big)
        #expect(PropertyListValue(foundationObject: NSNumber(value: UInt64.max)) == big)
        #expect {
            try Int64.deserialize(big)
        } throws: { error in
            (error as? PreferenceError)?.kind == .typeMismatch
        }
        #expect(try Double.deserialize(big) == Double(UInt64.max))
        struct Counter: Codable, PreferenceValue, Equatable { var total: UInt64 }
        let counter = Counter(total: .max)
        #expect(try Counter.deserialize(try #require(try Counter.serialize(counter))) == counter)
    }

    /// Stored shapes a set, a range or a keyed dictionary cannot take fall back to the default,
    /// reported, and never trap (a `ClosedRange` with its bounds the wrong way round would).
    @Test func badRangesAndKeysFallBack() throws {
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(MemoryStore())
        try prefs.store.setValue(.array([.integer(9), .integer(1)]), forKey: "closed")
        try prefs.store.setValue(.array([.integer(1)]), forKey: "open")
        try prefs.store.setValue(.dictionary(["x": .string("not an Int key")]), forKey: "byNumber")
        try prefs.store.setValue(.array([.string("a"), .integer(1)]), forKey: "set")
        #expect(prefs[Preferences.Key<ClosedRange<Int>>("closed", default: 0...1)] == 0...1)
        #expect(prefs[Preferences.Key<Range<Int>>("open", default: 0..<1)] == 0..<1)
        #expect(prefs[Preferences.Key<[Int: String]>("byNumber", default: [:])] == [:])
        #expect(prefs[Preferences.Key<Set<String>>("set", default: [])] == [])
        #expect(recorder.issues.count == 4)
        // Two keys with one description cannot be stored.
        #expect(throws: PreferenceError.self) {
            try prefs.set(
                [Loose("A"): 1, Loose("a"): 2], for: Preferences.Key<[Loose: Int]>("loose", default: [:]))
        }
    }

    @Test(arguments: [
        "https://example.com/a",
        "http://user@example.com:8080/p/a/t/h?query=1&b=%20#frag",
        "file:///tmp/a%20b",
        "mailto:someone@example.com",
        "custom-scheme://host/path",
        "x-app:relative",
        "data:text/plain;base64,SGVsbG8=",
        "/relative/path",
        "relative/path?q",
    ])
    func urlsKeepEveryScheme(text: String) throws {
        let url = try #require(URL(string: text))
        for kind in StoreKind.allCases {
            let prefs = IssueRecorder().preferences(kind.makeStore())
            let key = Preferences.Key<URL?>("url")
            prefs[key] = url
            #expect(prefs[key]?.absoluteString == text, "through \(kind)")
            #expect(prefs.store.value(forKey: "url") == .string(text), "stored as the exact string")
        }
    }
}

/// A dictionary key whose description forgets case, so two keys can share one.
struct Loose: PreferenceDictionaryKey {
    let text: String
    init(_ text: String) { self.text = text }
    var description: String { text.lowercased() }
}
