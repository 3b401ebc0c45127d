import Foundation
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Schema version 3: checkpoints list the keys they moved (`prefs_moved`), and a store behind
/// SQLite catches up from that list, or from every row when the list cannot say.
@Suite struct MovesListTests {
    /// The rows `store` would adopt after sequence number `known`, by key.
    private func changed(in store: SQLiteStore, after known: UInt64) throws -> [StoreKey: PropertyListValue?]
    {
        try store.core.sqlite.withDatabase(during: "a test") { database in
            try store.core.sqlite.rowsChanged(after: known, in: &database)
        }.values
    }

    /// Runs `sql` on the store's file through a connection of its own, committed.
    private func change(_ path: String, _ sql: String) throws {
        let connection = try SQLiteConnection(path: path)
        try connection.execute(sql)
    }

    /// The sequence number up to which the file's SQLite holds every record.
    private func checkpointed(_ path: String) throws -> UInt64 {
        try StoreConnection.checkpointedSequence(SQLiteConnection(path: path, readOnly: true))
    }

    private func integer(_ path: String, _ sql: String) throws -> Int64? {
        try SQLiteConnection(path: path, readOnly: true).integer(sql)
    }

    @Test func checkpointsListTheKeysTheyMoveAndCatchingUpReadsThem() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        // Enough rows that looking the few listed keys up is cheaper than reading every row.
        try store.transaction { t in for index in 0..<100 { t["other\(index)"] = .integer(Int64(index)) } }
        try store.setValue(.integer(1), forKey: "before")
        try store.flush()
        let known = try checkpointed(path)
        for index in 0..<20 { try store.setValue(.integer(Int64(index)), forKey: "k\(index % 5)") }
        try store.setValue(nil, forKey: "before")
        try store.flush()
        var listed: [StoreKey] = []
        try SQLiteConnection(path: path, readOnly: true).run(
            "SELECT keys FROM prefs_moved WHERE batch > \(known)"
        ) { row in listed += StoreConnection.MovedKeys.keys(in: row.blobBytes(0)) ?? [] }
        #expect(Set(listed) == ["before", "k0", "k1", "k2", "k3", "k4"] && listed.count == 6)
        let rows = try changed(in: store, after: known)
        var expected: [StoreKey: PropertyListValue?] = ["before": nil]
        for index in 15..<20 { expected["k\(index % 5)"] = .some(.integer(Int64(index))) }
        #expect(rows == expected)
    }

    /// A list that is not one (a damaged file) is never trusted: catching up reads every row.
    @Test func aDamagedListIsCaughtUpFromEveryRow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        for index in 0..<3 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
        try store.flush()
        try change(path, "UPDATE prefs_moved SET keys = X'FFFFFF7F6B30'")
        let rows = try changed(in: store, after: 0)
        #expect(rows == ["k0": .integer(0), "k1": .integer(1), "k2": .integer(2)])
    }

    /// Two spellings of one text are two keys, in the list as in the store.
    @Test func keysThatDifferOnlyInNormalisationAreBothCaughtUp() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.transaction { t in for index in 0..<100 { t["other\(index)"] = .integer(Int64(index)) } }
        try store.flush()
        let known = try checkpointed(path)
        try store.setValue(.integer(1), forKey: "caf\u{E9}")
        try store.setValue(.integer(2), forKey: "cafe\u{301}")
        try store.flush()
        let rows = try changed(in: store, after: known)
        #expect(rows.count == 2 && rows["caf\u{E9}"] == .some(.integer(1)))
    }

    /// A checkpoint of a release that lists nothing (one that opened the file before it was
    /// upgraded) leaves the list short: catching up then reads every row.
    @Test func aCheckpointThatListsNothingIsCaughtUpFromEveryRow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "listed")
        try store.flush()
        let known = try checkpointed(path)
        let unlisted = known + 1_000
        try change(
            path,
            """
            INSERT INTO prefs_entries(key, value, seq) VALUES ('unlisted', NULL, \(unlisted));
            UPDATE prefs_meta SET value = \(unlisted) WHERE name = 'checkpointed_sequence';
            """)
        #expect(try changed(in: store, after: known)["unlisted"] == .some(PropertyListValue?.none))
    }

    /// A store further behind than the list reaches reads every row.
    @Test func aStoreBehindTheListsStartIsCaughtUpFromEveryRow() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        for index in 0..<10 { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
        try store.flush()
        let through = try integer(path, "SELECT value FROM prefs_meta WHERE name = 'moved_through'") ?? 0
        // As when the list was cut: its start moves past what it held.
        try change(
            path,
            """
            DELETE FROM prefs_moved;
            UPDATE prefs_meta SET value = \(through) WHERE name = 'moved_from';
            """)
        let rows = try changed(in: store, after: 0)
        #expect(rows.count == 10 && rows["k9"] == .some(.integer(9)))
    }

    /// The list keeps the last ``StoreConnection/keptMoves`` sequence numbers of moves.
    @Test func theListIsCutBehindItsLastMoves() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "old")
        try store.flush()
        let connection = try SQLiteConnection(path: path)
        let previous = UInt64(
            try connection.integer("SELECT value FROM prefs_meta WHERE name = 'moved_through'") ?? 0)
        let far = previous + StoreConnection.keptMoves + 10
        try connection.execute("BEGIN")
        try StoreConnection.upsert("new", .null, sequence: far, into: connection)
        var newKey = StoreConnection.MovedKeys()
        newKey.add("new")
        try StoreConnection.list(newKey, batch: far, in: connection)
        try StoreConnection.setCheckpointedSequence(far, after: previous, in: connection)
        try connection.execute("COMMIT")
        #expect(try connection.integer("SELECT count(*) FROM prefs_moved WHERE batch <= \(previous)") == 0)
        #expect(try connection.integer("SELECT count(*) FROM prefs_moved WHERE batch = \(far)") == 1)
        #expect(
            try connection.integer("SELECT value FROM prefs_meta WHERE name = 'moved_from'")
                == Int64(far - StoreConnection.keptMoves))
    }

    /// A file of schema version 2 is upgraded: its index by sequence number goes, the list
    /// starts at its last checkpoint, and a store behind that reads every row.
    @Test func aVersionTwoFileIsUpgraded() throws {
        let path = TestFiles.uniquePath()
        do {
            let old = try SQLiteConnection(path: path)
            try old.execute(
                """
                CREATE TABLE prefs_entries(key TEXT PRIMARY KEY NOT NULL, value BLOB, seq INTEGER NOT NULL);
                CREATE INDEX prefs_entries_seq ON prefs_entries(seq);
                CREATE TABLE prefs_meta(name TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
                INSERT INTO prefs_meta(name, value) VALUES ('checkpointed_sequence', 8);
                PRAGMA user_version = 2;
                """)
            try old.run(
                "INSERT INTO prefs_entries(key, value, seq) VALUES ('name', ?1, 7), ('gone', NULL, 8)",
                [.blob(PropertyListValue.string("kept").storedEncoding())])
        }
        let store = try SQLiteStore(path: path)
        #expect(store.snapshot() == ["name": .string("kept")])
        #expect(try integer(path, "PRAGMA user_version") == StoreEngine.schemaVersion)
        #expect(try integer(path, "SELECT count(*) FROM sqlite_master WHERE name = 'prefs_entries_seq'") == 0)
        #expect(try integer(path, "SELECT value FROM prefs_meta WHERE name = 'moved_from'") == 8)
        #expect(try changed(in: store, after: 6) == ["name": .string("kept"), "gone": nil])
    }
}
