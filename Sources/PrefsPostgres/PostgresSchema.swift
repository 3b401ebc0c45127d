#if PREFS_POSTGRESQL
    import Foundation

    /// Creates the table and upgrades it to this release's schema, once per database, safely when
    /// several processes start at once, and without a lock when it is there already.
    ///
    /// Version 2 gives every row the sequence number of the write that made it (from one
    /// PostgreSQL sequence, taken under the namespace's lock, so it grows in commit order) and
    /// keeps a removal as a row whose value is NULL: instances catch up by sequence number, and a
    /// cache applies a value only over an older one.
    enum Schema {
        static let version = 2

        /// Makes or upgrades the tables when they are not there at this version.
        ///
        /// It looks without a lock first (they are there, but for the first connection to a
        /// database or after an upgrade of Prefs); makes or upgrades them otherwise, in one message whose transaction holds an advisory lock (concurrent
        /// `CREATE … IF NOT EXISTS` can still collide). The server runs that message whole once it
        /// has it: a host that dies while preparing holds nothing another connection waits on.
        static func prepare(_ connection: PostgresConnection) throws {
            let present = try connection.runScript(
                """
                SELECT to_regclass('prefs_entries') IS NOT NULL AND to_regclass('prefs_meta') IS NOT NULL
                    AND to_regclass('prefs_keys') IS NOT NULL AND to_regclass('prefs_seq') IS NOT NULL
                    AND to_regclass('prefs_entries_seq') IS NOT NULL
                """)
            // (A statement naming a table that is missing fails when parsed: two statements.)
            var stored =
                firstCell(present) == Data("t".utf8)
                ? firstCell(
                    try connection.runScript("SELECT value FROM prefs_meta WHERE name = 'schema_version'")
                )
                .flatMap { Int(String(decoding: $0, as: UTF8.self)) } : nil
            if stored.map({ $0 < version }) ?? true {
                // From version 1: removals were deleted rows and rows had no sequence number.
                let found = try connection.runScript(
                    """
                    SET client_min_messages = warning;
                    SELECT pg_advisory_xact_lock(7370215);
                    CREATE TABLE IF NOT EXISTS prefs_entries (
                        namespace TEXT NOT NULL, key TEXT NOT NULL, value BYTEA,
                        seq BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (namespace, key));
                    CREATE TABLE IF NOT EXISTS prefs_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS prefs_keys (
                        namespace TEXT NOT NULL, key TEXT NOT NULL, description BYTEA NOT NULL,
                        PRIMARY KEY (namespace, key));
                    INSERT INTO prefs_meta(name, value) VALUES ('schema_version', '\(version)')
                        ON CONFLICT (name) DO NOTHING;
                    DO $$ BEGIN
                        IF (SELECT value FROM prefs_meta WHERE name = 'schema_version') IN ('0', '1') THEN
                            ALTER TABLE prefs_entries ADD COLUMN IF NOT EXISTS seq BIGINT NOT NULL DEFAULT 0;
                            ALTER TABLE prefs_entries ALTER COLUMN value DROP NOT NULL;
                            UPDATE prefs_meta SET value = '2' WHERE name = 'schema_version';
                        END IF;
                    END $$;
                    CREATE SEQUENCE IF NOT EXISTS prefs_seq;
                    CREATE INDEX IF NOT EXISTS prefs_entries_seq ON prefs_entries(namespace, seq);
                    SELECT value FROM prefs_meta WHERE name = 'schema_version'
                    """)
                stored = firstCell(found).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            }
            if let stored, stored > version {
                throw PostgresConnection.Failure(
                    message:
                        "the table was created by a newer Prefs (schema version \(stored); this release knows \(version))",
                    connectionLost: false)
            }
        }
    }
#endif
