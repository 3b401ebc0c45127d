import Foundation
import Testing

@testable import Prefs

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
        SQLiteStoreError(path: "/tmp/x.sqlite", kind: .notADatabase, detail: "file is not a database"),
        UserDefaultsStoreError(kind: .suiteRefused, suite: "NSGlobalDomain"),
        UserDefaultsStoreError(kind: .keyConflict(key: "e\u{301}", storedKey: "\u{E9}"), suite: "app"),
        UserDefaultsStoreError(kind: .writeFailed(keys: ["a"]), suite: "app"),
    ]

    @Test(arguments: 0..<errors.count)
    func localizedDescriptionIsTheErrorsOwnMessage(index: Int) {
        let error = Self.errors[index]
        #expect(error.localizedDescription == error.description)
        #expect(!error.localizedDescription.contains("could not be completed"))
    }
}
