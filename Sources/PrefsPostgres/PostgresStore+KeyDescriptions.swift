#if PREFS_POSTGRESQL
    import Foundation
    import Prefs

    /// Key descriptions in `prefs_keys(namespace, key, description)`, beside the namespace's
    /// values: written only where they changed, so publishing at every launch costs one query.
    extension PostgresStore {
        /// The key descriptions published to this namespace (none when the server cannot be
        /// reached).
        package func keyDescriptions() -> [String: PropertyListValue] {
            (try? withConnection { connection in try readDescriptions(connection) }) ?? [:]
        }

        /// Keeps key descriptions for this namespace, each replacing the one before.
        package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
            try withConnection { connection in
                let kept = try readDescriptions(connection)
                let changed = descriptions.filter { kept[$0.key] != $0.value }
                guard !changed.isEmpty else { return }
                try connection.run("BEGIN")
                do {
                    for (key, description) in changed.sorted(by: { $0.key < $1.key }) {
                        try connection.run(
                            """
                            INSERT INTO prefs_keys(namespace, key, description) VALUES ($1, $2, $3)
                            ON CONFLICT (namespace, key) DO UPDATE SET description = excluded.description
                            """, [.text(namespace), .text(key), .bytes(description.storedEncoding())])
                    }
                    try connection.run("COMMIT")
                } catch {
                    _ = try? connection.run("ROLLBACK")
                    throw error
                }
            }
        }

        private func readDescriptions(_ connection: PostgresConnection) throws -> [String: PropertyListValue]
        {
            var descriptions: [String: PropertyListValue] = [:]
            for row in try connection.run(
                "SELECT key, description FROM prefs_keys WHERE namespace = $1", [.text(namespace)])
            {
                guard row.count == 2, let key = row[0], let bytes = row[1],
                    let description = try? PropertyListValue(storedEncoding: bytes)
                else { continue }  // a description this release cannot decode: the key reads as undeclared
                descriptions[String(decoding: key, as: UTF8.self)] = description
            }
            return descriptions
        }

        /// Runs `body` on the server's writing connection (one at a time in the process).
        private func withConnection<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
            do {
                return try hub.writer.withLock(during: "key descriptions on \(description)") { state in
                    let connection = try hub.connectedWriter(&state, store: description)
                    do {
                        return try body(connection)
                    } catch let failure as PostgresConnection.Failure {
                        if failure.connectionLost { state.connection = nil }
                        throw failure
                    }
                }
            } catch let failure as PostgresConnection.Failure {
                throw StoreError(
                    kind: failure.connectionLost ? .connectionLost : .server, store: description,
                    message: failure.message)
            }
        }
    }
#endif
