import Foundation
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Nothing lost, nothing hung": the SQLite store's opening and binding defects, each
/// with the test that failed before its fix.
@Suite struct SQLiteOpeningTests {
    /// Item 1: a commit made while a store loads is seen, not lost until some later commit.
    @Test func aCommitWhileLoadingIsSeen() async throws {
        let path = TestFiles.uniquePath()
        let writer = try SQLiteStore(path: path)
        try writer.setValue(.integer(1), forKey: "before")
        // Commit from another connection after the new store has read its rows.
        var options = SQLiteStore.Options()
        options.faults.afterLoadingRows = { try? writer.setValue(.integer(7), forKey: "during") }
        let reader = try SQLiteStore(path: path, options: options)
        #expect(reader.value(forKey: "before") == .integer(1))
        #expect(await eventually { reader.value(forKey: "during") == .integer(7) })
    }

    /// Item 6: another program's database is refused before anything in it changes; `_` in a
    /// table name is not a wildcard.
    @Test(arguments: ["prefsettings", "prefs_entries_backup", "PREFS_ENTRIES", "other"])
    func anotherProgramsDatabaseIsRefusedUntouched(table: String) throws {
        let path = TestFiles.uniquePath()
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("CREATE TABLE \"\(table)\"(a); INSERT INTO \"\(table)\" VALUES (1);")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteStore(path: path)
        } throws: { error in
            (error as? StoreError)?.kind == .foreignDatabase
                && "\(error)".contains(table)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try SQLiteConnection(path: path).text("PRAGMA journal_mode") == "delete")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    /// Item 7: `:memory:` and the empty path name no file; they are refused, and no file named
    /// `:memory:` appears.
    @Test(arguments: [":memory:", ""])
    func namesThatAreNotFilesAreRefused(path: String) throws {
        let folder = FileManager.default.currentDirectoryPath
        let existed = FileManager.default.fileExists(atPath: "\(folder)/:memory:")
        #expect {
            _ = try SQLiteStore(path: path)
        } throws: { error in
            (error as? StoreError)?.kind == .cannotOpen && "\(error)".contains("MemoryStore")
        }
        if !existed { #expect(!FileManager.default.fileExists(atPath: "\(folder)/:memory:")) }
    }

    /// Item 8: a value over 2 GiB is refused with a typed error before it reaches SQLite's
    /// `Int32` lengths (it used to trap converting the size).
    @Test func aValueOverTwoGigabytesIsTooLarge() throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath())
        // `Data(count:)` maps zeroed pages lazily: nothing touches these 2 GiB.
        let huge = Data(count: Int(Int32.max) + 1)
        #expect {
            try store.core.sqlite.withDatabase(during: "a test") { database in
                try store.core.sqlite.perform {
                    try database.connection.run("SELECT length(?1)", [.blob(huge)])
                }
            }
        } throws: { error in
            (error as? StoreError)?.kind == .tooLarge
        }
        try store.setValue(.integer(1), forKey: "still")
        #expect(store.value(forKey: "still") == .integer(1))
    }

    /// Item 10: the busy timeout keeps its fractions of a second.
    @Test(arguments: [
        (Duration.milliseconds(500), Int64(500)), (.milliseconds(1_250), 1_250), (.seconds(3), 3_000),
    ])
    func busyTimeoutKeepsMilliseconds(timeout: Duration, milliseconds: Int64) throws {
        let store = try SQLiteStore(path: TestFiles.uniquePath(), options: .init(lockTimeout: timeout))
        // Each use of the connection opens it anew, configured as the first.
        for _ in 0..<2 {
            let found = try store.core.sqlite.withDatabase(during: "a test") {
                try $0.connection.integer("PRAGMA busy_timeout")
            }
            #expect(found == milliseconds)
        }
    }
}
