import Foundation

/// A failure of the journal, named as the store's errors are (``Kind`` mirrors the kinds of
/// `SQLiteStoreError`, which the store makes of it at its boundary), with the database it belongs
/// to and what happened.
///
/// ```swift
/// throw JournalError(.cannotOpen, path: databasePath, "the journal is a directory")
/// ```
///
/// It is also the one place where a failed system call becomes an error: the message names what
/// was being done and the system's reason, and the kind comes from `errno` where it says more than
/// the caller's guess (a full disk, a read-only file system, files protected until the first
/// unlock).
package struct JournalError: Error, CustomStringConvertible {
    /// What went wrong, by the name of the store error's kind it becomes.
    package enum Kind: String, Sendable, CaseIterable {
        case cannotOpen, replaced, foreignDatabase, newerSchema, corrupt, readOnly, diskFull
        case busy, deadlock, protectedDataUnavailable, closed, tooLarge, other
    }

    package let kind: Kind
    /// The database the journal belongs to (the store's path, which its errors name).
    package let path: String
    package let message: String

    package init(_ kind: Kind, path: String, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    /// An error for a system call that failed with `code` while doing `what`.
    ///
    /// ```swift
    /// throw JournalError(.cannotOpen, path: path, failedTo: "map the journal", errno: errno)
    /// ```
    package init(_ kind: Kind, path: String, failedTo what: String, errno code: Int32) {
        let specific: Kind? =
            switch code {
            case ENOSPC, EDQUOT: .diskFull
            case EROFS: .readOnly
            default: Self.kind(ofOpenFailure: code)
            }
        self.init(specific ?? kind, path: path, "cannot \(what): \(Self.systemReason(code))")
    }

    package var description: String { "\(path): \(kind) (\(message))" }

    /// The system's words for an `errno` value.
    package static func systemReason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Whether this platform protects files by class (so a refused open can mean "locked").
    package static var platformProtectsFiles: Bool {
        #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
            true
        #else
            false
        #endif
    }

    /// What a failure to open a store's file with `errno` means: on a platform with data
    /// protection, `EPERM` is a protected file before the first unlock.
    package static func kind(ofOpenFailure errno: Int32, platformProtectsFiles: Bool = platformProtectsFiles)
        -> Kind?
    {
        platformProtectsFiles && errno == EPERM ? .protectedDataUnavailable : nil
    }
}
