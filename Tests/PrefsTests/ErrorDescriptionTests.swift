import Foundation
import Testing

@testable import Prefs
@testable import PrefsJournal

/// Issue "A house a newcomer can live in", item 3: every error type answers `localizedDescription`
/// with its own message (Foundation's default for a Swift error says only "The operation could not
/// be completed").
@Suite struct ErrorDescriptionTests {
    static let errors: [any Error & CustomStringConvertible] = [
        PreferenceError(key: "volume", store: "MemoryStore", reason: .store(POSIXError(.ENOSPC))),
        ValueCodingError.typeMismatch(expected: "Int", found: .string("x")),
        MigrationError.stepsOutOfOrder(version: 1, after: 2),
        TransactionTimeoutError(store: "MemoryStore", waited: .seconds(10)),
        StoredEncodingError(reason: "unknown tag 255"),
        SQLiteStoreError(path: "/tmp/x.sqlite", kind: .notADatabase, message: "file is not a database"),
        UserDefaultsStoreError(kind: .suiteRefused, suite: "NSGlobalDomain"),
        UserDefaultsStoreError(kind: .keyConflict, suite: "app", keys: ["e\u{301}", "\u{E9}"]),
        UserDefaultsStoreError(kind: .writeFailed, suite: "app", keys: ["a"]),
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
        let later = SQLiteStoreError(
            path: "/tmp/p.sqlite", kind: .init(rawValue: "quotaExceeded"), message: "m")
        #expect(later.description == "/tmp/p.sqlite: quotaExceeded (m)")
        #expect(later.kind != .other && later.kind.rawValue == "quotaExceeded")
        let defaults = UserDefaultsStoreError(
            kind: .init(rawValue: "sandboxDenied"), suite: "app", keys: ["k"])
        #expect(defaults.description.contains("sandboxDenied") && defaults.description.contains("k"))
        #expect(SQLiteStoreError.Kind(rawValue: "busy") == .busy)
        #expect(UserDefaultsStoreError.Kind(rawValue: "keyConflict") == .keyConflict)
    }

    /// Every failure of the engine (the `PrefsJournal` module) becomes a store error of a kind this
    /// release names and describes, with its path and message.
    @Test(arguments: JournalError.Kind.allCases)
    func everyJournalFailureBecomesAKnownStoreError(kind: JournalError.Kind) {
        let error = SQLiteStoreError(JournalError(kind, path: "/p", "m"))
        #expect(error.kind.problem != error.kind.rawValue, "\(kind) is not a kind SQLiteStoreError describes")
        #expect(error.path == "/p" && error.message == "m")
    }

    /// Every kind this release names has words of its own in the description.
    @Test(arguments: [
        SQLiteStoreError.Kind.notADatabase, .corrupt, .cannotOpen, .newerSchema, .readOnly, .diskFull, .busy,
        .foreignDatabase, .tooLarge, .replaced, .deadlock, .protectedDataUnavailable, .expired, .closed,
        .other,
    ])
    func everyKnownKindIsDescribedInWords(kind: SQLiteStoreError.Kind) {
        #expect(kind.problem != kind.rawValue)
        #expect(
            SQLiteStoreError(path: "/p", kind: kind, message: "m").description == "/p: \(kind.problem) (m)")
    }
}
