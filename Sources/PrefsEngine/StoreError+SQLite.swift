import Foundation
import PrefsModel

#if canImport(SQLite3)
    import SQLite3
#else
    import CSQLite
#endif

extension StoreError {
    /// SQLite's failure as the store's error, its result code sorted into a kind.
    init(path: String, _ failure: SQLiteConnection.Failure) {
        let kind: Kind
        switch failure.primaryCode {
        case SQLITE_NOTADB: kind = .notADatabase
        case SQLITE_CORRUPT: kind = .corrupt
        case SQLITE_CANTOPEN:
            kind =
                JournalError.isProtectedData(openFailure: failure.systemErrno, path: path)
                ? .protectedDataUnavailable : .cannotOpen
        case SQLITE_READONLY: kind = .readOnly
        case SQLITE_FULL: kind = .diskFull
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_TOOBIG: kind = .tooLarge
        // An I/O error whose system call ran out of space (growing the WAL or its index, writing
        // a page, syncing) is a full disk, however SQLite names the call.
        case SQLITE_IOERR where failure.systemErrno == ENOSPC || failure.systemErrno == EDQUOT:
            kind = .diskFull
        case SQLITE_IOERR where failure.code == StoreError.ioErrorGrowingTheWALIndex:
            kind = .diskFull
        default: kind = .other
        }
        self.init(path: path, kind: kind, detail: failure.description)
    }

    /// `SQLITE_IOERR_SHMSIZE`: the WAL index (`-shm`) could not grow, which a full disk causes.
    static let ioErrorGrowingTheWALIndex: Int32 = 4874
}
