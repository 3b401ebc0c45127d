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
    ///
    /// Inside the system's background time, as every use of SQLite that outlasts a call's own
    /// write: it runs at launch (a migration), and an app suspended holding SQLite's locks in an
    /// App Group container is ended. Taken back, it stops at its next wait (`.expired`); refused,
    /// it throws `.expired` having done nothing. Either way a later call erases what is left.
    package func eraseRemovedValues() throws {
        guard let journal, journal.isWritable else {
            throw StoreError(
                path: path, kind: .readOnly, detail: "cannot erase removed values from a read-only store")
        }
        let outcome = ExpiringActivity.runAndWaitForResult(
            "erasing removed values from \(path)", system: options.faults.expiringActivity
        ) { expiry in try self.erase(journal, expiry: expiry) }
        guard let outcome else {
            throw StoreError(
                path: path, kind: .expired,
                detail: "the system gave no background time to erase removed values; nothing was erased yet")
        }
        try outcome.get()
    }

    private func erase(_ journal: Journal, expiry: ExpiringActivity.Expiry) throws {
        try checkpointer.checkpoint(expiry: expiry)
        try StoreError.fromJournal {
            try journal.withLock(timeout: options.busyTimeout, expiry: expiry) { _ in
                journal.zero(from: journal.writeOffset, to: journal.actualFileSize())
            }
        }
        let giveUp = { expiry.isExpired }
        do {
            try rebuildDatabase(expiry: expiry, giveUp: giveUp)
        } catch  where expiry.isExpired {
            throw StoreError(path: path, kind: .expired, detail: "while erasing removed values")
        }
    }

    /// `VACUUM` with `secure_delete`, then the write-ahead log emptied into the file.
    private func rebuildDatabase(expiry: ExpiringActivity.Expiry, giveUp: () -> Bool) throws {
        try sqlite.withDatabase(during: "erasing removed values", expiry: expiry) { database in
            let connection = database.connection
            try sqlite.perform {
                // The waits are this loop's, not SQLite's busy handler: they end as soon as the
                // system asks for its time back.
                connection.setBusyTimeout(milliseconds: 0)
                defer { connection.setBusyTimeout(milliseconds: options.busyTimeout.wholeMilliseconds) }
                try connection.run("PRAGMA secure_delete = ON")
                defer { try? connection.run("PRAGMA secure_delete = OFF") }
                try connection.retryingWhileBusy(timeout: options.busyTimeout, givingUpWhen: giveUp) {
                    try connection.run("VACUUM")
                }
                // A checkpoint that could not take every frame (another process reading an older
                // snapshot) answers busy = 1: the log still holds old pages.
                try connection.retryingWhileBusy(timeout: options.busyTimeout, givingUpWhen: giveUp) {
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
