import Foundation

/// The one place where a failed system call becomes the store's error: the message names what
/// was being done and the system's reason, and the kind comes from `errno` where it says more than
/// the caller's guess (a full disk, a read-only file system, files protected until the first
/// unlock).
extension SQLiteStoreError {
    /// An error for a system call that failed with `code` while doing `what`.
    ///
    /// ```swift
    /// throw SQLiteStoreError(path: path, kind: .cannotOpen, failedTo: "map the journal", errno: errno)
    /// ```
    init(path: String, kind: Kind, failedTo what: String, errno code: Int32) {
        let specific: Kind? =
            switch code {
            case ENOSPC, EDQUOT: .diskFull
            case EROFS: .readOnly
            default: SQLiteStore.FileProtection.kind(ofOpenFailure: code)
            }
        self.init(path: path, kind: specific ?? kind, message: "cannot \(what): \(Self.systemReason(code))")
    }

    /// The system's words for an `errno` value.
    static func systemReason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
