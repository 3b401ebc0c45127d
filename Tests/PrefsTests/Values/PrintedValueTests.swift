import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs

/// What a program prints is what a person reads: values as Swift writes them, changes in words,
/// types with Swift's own sugar.
@Suite struct PrintedValueTests {
    @Test func aValuePrintsItsTypeAndItsContents() {
        #expect(PropertyListValue.integer(60).description == "integer 60")
        #expect(PropertyListValue.string("hi").description == #"string "hi""#)
        #expect(PropertyListValue.array([.integer(1), .bool(true)]).description == "array [1, true]")
        #expect(
            PropertyListValue.dictionary(["b": .string("x"), "a": .array([])]).description
                == #"dictionary ["a": [], "b": "x"]"#)
        #expect(PropertyListValue.dictionary([:]).description == "dictionary [:]")
        #expect(PropertyListValue.data(Data([1, 2])).description == "data <2 bytes>")
        // A long collection says how much it leaves out.
        let long = PropertyListValue.array((0..<30).map { .integer(Int64($0)) })
        #expect(long.description.hasSuffix("10, … 19 more]"), "\(long.description)")
        // What `dictionaryRepresentation()` prints: the values, not their count.
        let prefs = IssueRecorder().preferences(MemoryStore(["recent": .array([.string("a.txt")])]))
        #expect("\(prefs.dictionaryRepresentation())" == #"[recent: array ["a.txt"]]"#)
    }

    @Test func aChangePrintsInWords() {
        #expect("\(ValueChange.set(.integer(60)))" == "set to integer 60")
        #expect("\(ValueChange.removed)" == "removed")
        let change = StoreChange(values: ["volume": .set(.double(0.8)), "theme": .removed])
        #expect("\(change)" == "theme removed; volume set to float 0.8")
    }

    @Test func typesAreSpelledAsSwiftWritesThem() {
        #expect(swiftSpelling(of: URL?.self) == "URL?")
        #expect(swiftSpelling(of: [String].self) == "[String]")
        #expect(swiftSpelling(of: [String: [Int]?].self) == "[String: [Int]?]")
        #expect(swiftSpelling(of: Set<Int>.self) == "Set<Int>")
        #expect(swiftSpelling("Optional<Array<String>>") == "[String]?")
        #expect(swiftSpelling("not <a type") == "not <a type", "a name it cannot read stays as it is")
        #expect(Preferences.Key<URL?>("endpoint").keyDescription.swiftType == "URL?")
        // A mismatch names the type so too.
        let issues = IssueRecorder()
        let prefs = issues.preferences(MemoryStore(["tags": .string("x")]))
        _ = prefs[Preferences.Key<[String]?>("tags")]
        #expect(issues.issues.first?.description.contains("expected [String],") == true, "\(issues.issues)")
    }
}
