import Foundation
import PrefsModel

/// Which database a journal belongs to.
///
/// A journal is replayed only into the database that wrote it: when `<name>.sqlite` alone is
/// deleted (a user "resetting" an app) and made anew, the old `<name>-prefs` must not pour the
/// deleted store's unflushed values into it. Each database gets a random identity in
/// `prefs_meta` (`database_id`) the first time this release writes it, and each journal carries
/// the identity of its database in its header (`prefs_journal_header.database_id`).
extension StoreEngine {
    /// The database's identity, made (once, in a write transaction) when it has none yet.
    static func ensureDatabaseID(_ connection: SQLiteConnection) throws -> UInt64 {
        if let found = try databaseID(connection) { return found }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            var made: UInt64 = 0
            while made == 0 { made = UInt64.random(in: 1...UInt64(Int64.max)) }
            try connection.run(
                "INSERT OR IGNORE INTO prefs_meta(name, value) VALUES ('database_id', ?1)",
                [.integer(Int64(made))])
            let stored = try databaseID(connection) ?? made
            try connection.execute("COMMIT")
            return stored
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The database's identity, or `nil` for a file no release with identities wrote.
    static func databaseID(_ connection: SQLiteConnection) throws -> UInt64? {
        try connection.integer("SELECT value FROM prefs_meta WHERE name = 'database_id'").map {
            UInt64(bitPattern: $0)
        }
    }
}
