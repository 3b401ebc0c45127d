import Foundation
import PrefsModel

/// Key descriptions in a table of their own, `prefs_keys(key, description)`, beside the values:
/// written straight to SQLite (not through the journal: they are not values, and nobody observes
/// them), and only where they changed, so publishing at every launch costs one read.
extension SQLiteStoreCore {
    /// The key descriptions published to this store's file.
    package func keyDescriptions() -> [String: PropertyListValue] {
        (try? sqlite.withDatabase(during: "reading key descriptions") { database in
            try sqlite.perform { try Self.readDescriptions(database.connection) }
        }) ?? [:]
    }

    /// Keeps key descriptions in the file's `prefs_keys` table, each replacing the one before.
    package func publishKeyDescriptions(_ descriptions: [String: PropertyListValue]) throws {
        guard journal?.isWritable == true else {
            throw StoreError(path: path, kind: .readOnly, detail: "the store was opened read-only")
        }
        try sqlite.withDatabase(during: "publishing key descriptions") { database in
            let connection = database.connection
            // Compared as stored bytes (a description's encoding is canonical): nothing to decode.
            let kept = try sqlite.perform { try Self.readEncodedDescriptions(connection) }
            let changed = descriptions.mapValues { Data($0.storedEncoding()) }.filter {
                kept[$0.key] != $0.value
            }
            guard !changed.isEmpty else { return }
            try sqlite.perform {
                try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                    try connection.run("BEGIN IMMEDIATE")
                }
                do {
                    try connection.run(
                        "CREATE TABLE IF NOT EXISTS prefs_keys(key TEXT PRIMARY KEY NOT NULL, description BLOB NOT NULL)"
                    )
                    for (key, encoded) in changed.sorted(by: { $0.key < $1.key }) {
                        try connection.run(
                            """
                            INSERT INTO prefs_keys(key, description) VALUES (?1, ?2)
                            ON CONFLICT(key) DO UPDATE SET description = excluded.description
                            """, [.text(key), .blob(encoded)])
                    }
                    try connection.run("COMMIT")
                } catch {
                    try? connection.run("ROLLBACK")
                    throw error
                }
            }
        }
    }

    /// Every description in the file (none before the first publish made the table).
    private static func readDescriptions(_ connection: SQLiteConnection) throws -> [String: PropertyListValue]
    {
        // A description this release cannot decode is left out: the key reads as undeclared.
        try readEncodedDescriptions(connection).compactMapValues {
            try? PropertyListValue(storedEncoding: $0)
        }
    }

    /// Every description in the file as its stored bytes.
    private static func readEncodedDescriptions(_ connection: SQLiteConnection) throws -> [String: Data] {
        guard try connection.integer("SELECT 1 FROM sqlite_master WHERE name = 'prefs_keys'") != nil else {
            return [:]
        }
        var descriptions: [String: Data] = [:]
        try connection.run("SELECT key, description FROM prefs_keys") { row in
            descriptions[row.text(0)] = Data(row.blobBytes(1))
        }
        return descriptions
    }
}
