import PrefsModel

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

extension SQLiteStoreCore {
    /// Erases from the store's files the bytes of every value no longer stored: the journal's
    /// old records and SQLite's free pages and old page images, so that a value removed (a
    /// secret moved out of plain settings) is in none of them afterwards.
    ///
    /// The journal's records are moved into SQLite (a checkpoint) and the journal past its live
    /// records is zeroed; SQLite rebuilds the database (`VACUUM`, with `secure_delete` on, so
    /// nothing removed lingers in a page) and empties its write-ahead log into it (a `TRUNCATE`
    /// checkpoint). Throws `.busy` when another process keeps reading the old pages past the
    /// lock timeout: the removed value may then still be in the write-ahead log, and a later
    /// call erases it.
    package func eraseRemovedValues() throws {
        guard let journal, journal.isWritable else {
            throw StoreError(
                path: path, kind: .readOnly, detail: "cannot erase removed values from a read-only store")
        }
        try checkpointer.checkpoint()
        try StoreError.fromJournal {
            try journal.withLock(timeout: options.busyTimeout) { _ in
                journal.zero(from: journal.writeOffset, to: journal.actualFileSize())
            }
        }
        try sqlite.withDatabase(during: "erasing removed values") { database in
            let connection = database.connection
            try sqlite.perform {
                try connection.run("PRAGMA secure_delete = ON")
                defer { try? connection.run("PRAGMA secure_delete = OFF") }
                try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                    try connection.run("VACUUM")
                }
                // A checkpoint that could not take every frame (another process reading an older
                // snapshot) answers busy = 1: the log still holds old pages.
                try connection.retryingWhileBusy(timeout: options.busyTimeout) {
                    var busy: Int64 = 1
                    try connection.run("PRAGMA wal_checkpoint(TRUNCATE)") { row in busy = row.integer(0) }
                    if busy != 0 {
                        throw SQLiteConnection.Failure(
                            code: SQLITE_BUSY, message: "another process still reads the old pages in the log"
                        )
                    }
                }
            }
        }
    }
}
