import Foundation
import Testing

@testable import Prefs
@testable import PrefsEngine
@testable import PrefsModel

/// Issue "A house a newcomer can live in", item 3: every error type answers `localizedDescription`
/// with its own message (Foundation's default for a Swift error says only "The operation could not
/// be completed").
@Suite struct ErrorDescriptionTests {
    static let errors: [any Error & CustomStringConvertible] = [
        PreferenceError.notRepresentable(type: "UInt64", reason: "too large").naming(
            key: "n", store: "MemoryStore"),
        PreferenceError.typeMismatch(expected: "Int", found: .string("x")),
        PreferenceError(.migrationFailed, "migration step 1 comes after step 2"),
        StoreError(kind: .busy, store: "MemoryStore", message: "held for more than 10 seconds"),
        StoredEncodingError(reason: "unknown tag 255"),
        StoreError(path: "/tmp/x.sqlite", kind: .notADatabase, detail: "file is not a database"),
        StoreError.userDefaults(.suiteRefused, suite: "NSGlobalDomain"),
        StoreError.userDefaults(.keyConflict, suite: "app", keys: ["e\u{301}", "\u{E9}"]),
        StoreError.userDefaults(.writeFailed, suite: "app", keys: ["a"]),
    ]

    @Test(arguments: 0..<errors.count)
    func localizedDescriptionIsTheErrorsOwnMessage(index: Int) {
        let error = Self.errors[index]
        #expect(error.localizedDescription == error.description)
        #expect(!error.localizedDescription.contains("could not be completed"))
    }

    /// Issue 28, item 5: an error kind is an open set of names, so a kind a later release adds
    /// breaks no `switch`, and an error of a kind this release does not know still says which.
    @Test func aKindThisReleaseDoesNotKnowIsNamedInTheMessage() {
        let later = StoreError(
            path: "/tmp/p.sqlite", kind: .init(name: "quotaExceeded"), detail: "m")
        #expect(later.description == "/tmp/p.sqlite: quotaExceeded (m)")
        #expect(later.kind != .other && later.kind.name == "quotaExceeded")
        let defaults = StoreError.userDefaults(
            .init(name: "sandboxDenied"), suite: "app", keys: ["k"])
        #expect(defaults.description.contains("sandboxDenied") && defaults.description.contains("k"))
        #expect(StoreError.Kind(name: "busy") == .busy)
        #expect(StoreError.Kind(name: "keyConflict") == .keyConflict)
        let own = StoreError(kind: .init(name: "quotaExceeded"), store: "RemoteStore", message: "m")
        #expect(own.description == "RemoteStore: m")
    }

    /// Every failure of the engine (the `PrefsEngine` module) becomes a store error of a kind this
    /// release names and describes, with its path and message.
    @Test(arguments: JournalError.Kind.allCases)
    func everyJournalFailureBecomesAKnownStoreError(kind: JournalError.Kind) {
        let error = StoreError(JournalError(kind, path: "/p", "m"))
        #expect(error.kind.problem != error.kind.name, "\(kind) is not a kind StoreError describes")
        #expect(error.storeDescription == "/p" && error.message == "\(error.kind.problem) (m)")
    }

    /// Every kind this release names has words of its own in the description.
    @Test(arguments: [
        StoreError.Kind.notADatabase, .corrupt, .cannotOpen, .newerSchema, .readOnly, .diskFull, .busy,
        .foreignDatabase, .tooLarge, .replaced, .deadlock, .protectedDataUnavailable, .expired, .closed,
        .other,
    ])
    func everyKnownKindIsDescribedInWords(kind: StoreError.Kind) {
        #expect(kind.problem != kind.name)
        #expect(
            StoreError(path: "/p", kind: kind, detail: "m").description == "/p: \(kind.problem) (m)")
    }
}
