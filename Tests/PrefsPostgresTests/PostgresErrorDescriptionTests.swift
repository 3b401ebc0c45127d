#if PREFS_POSTGRESQL
    import Foundation
    import Testing

    @testable import PrefsPostgres

    /// Issue "A house a newcomer can live in", item 3: `localizedDescription` is the error's own
    /// message, not Foundation's "The operation could not be completed".
    @Suite struct PostgresErrorDescriptionTests {
        @Test func localizedDescriptionIsTheErrorsOwnMessage() {
            let error = PostgresStoreError(
                kind: .connectionLost, store: "PostgresStore(namespace: ns)",
                message: "server closed the connection")
            #expect(error.localizedDescription == error.description)
            #expect(error.localizedDescription.contains("server closed the connection"))
        }
    }
#endif
