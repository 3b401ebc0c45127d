#if PREFS_POSTGRESQL
    import Foundation

    /// Creates the table and upgrades it to this release's schema, once per database, safely when
    /// several processes start at once.
    ///
    /// Version 2 gives every row the sequence number of the write that made it (from one
    /// PostgreSQL sequence, taken under the namespace's lock, so it grows in commit order) and
    /// keeps a removal as a row whose value is NULL: instances catch up by sequence number, and a
    /// cache applies a value only over an older one.
    enum Schema {
        static let version = 2

        static func prepare(_ connection: PostgresConnection) throws {
            try connection.preparingSchema(advisoryLock: 7_370_215) {
                try connection.run(
                    """
                    CREATE TABLE IF NOT EXISTS prefs_entries (
                        namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA,
                        seq BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (namespace, key))
                    """)
                try connection.run(
                    "CREATE TABLE IF NOT EXISTS prefs_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                // Key descriptions, beside the values of each namespace (never among them).
                try connection.run(
                    """
                    CREATE TABLE IF NOT EXISTS prefs_keys (
                        namespace TEXT NOT NULL, key TEXT NOT NULL, description BYTEA NOT NULL,
                        PRIMARY KEY (namespace, key))
                    """)
                try connection.run(
                    "INSERT INTO prefs_meta(name, value) VALUES ('schema_version', $1) ON CONFLICT (name) DO NOTHING",
                    [.text(String(version))])
                let found = try connection.run("SELECT value FROM prefs_meta WHERE name = 'schema_version'")
                let stored = firstCell(found).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                guard stored <= version else {
                    throw PostgresConnection.Failure(
                        message:
                            "the table was created by a newer Prefs (schema version \(stored); this release knows \(version))",
                        connectionLost: false)
                }
                if stored < 2 {
                    // From version 1: removals were deleted rows and rows had no sequence number.
                    try connection.run(
                        "ALTER TABLE prefs_entries ADD COLUMN IF NOT EXISTS seq BIGINT NOT NULL DEFAULT 0")
                    try connection.run("ALTER TABLE prefs_entries ALTER COLUMN value DROP NOT NULL")
                    try connection.run(
                        "UPDATE prefs_meta SET value = $1 WHERE name = 'schema_version'", [.text("2")])
                }
                try connection.run("CREATE SEQUENCE IF NOT EXISTS prefs_seq")
                try connection.run(
                    "CREATE INDEX IF NOT EXISTS prefs_entries_seq ON prefs_entries(namespace, seq)")
            }
        }
    }
#endif
