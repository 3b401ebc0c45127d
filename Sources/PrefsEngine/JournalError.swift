import Foundation

/// A failure of the journal, named as the store's errors are (``Kind`` mirrors the kinds of
/// `StoreError`, which the store makes of it at its boundary), with the database it belongs
/// to and what happened.
///
/// ```swift
/// throw JournalError(.cannotOpen, path: "/tmp/app.sqlite", "the journal is a directory")
/// ```
///
/// It is also the one place where a failed system call becomes an error: the message names what
/// was being done and the system's reason, and the kind comes from `errno` where it says more than
/// the caller's guess (a full disk, a read-only file system, files protected until the first
/// unlock).
struct JournalError: Error, CustomStringConvertible {
    /// What went wrong, by the name of the store error's kind it becomes.
    enum Kind: String, Sendable, CaseIterable {
        case cannotOpen, replaced, foreignDatabase, newerSchema, corrupt, readOnly, diskFull
        case busy, deadlock, protectedDataUnavailable, closed, tooLarge, other
    }

    let kind: Kind
    /// The database the journal belongs to (the store's path, which its errors name).
    let path: String
    let message: String

    init(_ kind: Kind, path: String, _ message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    /// An error for a system call that failed with `code` while doing `what`.
    ///
    /// ```swift
    /// throw JournalError(.cannotOpen, path: path, failedTo: "map the journal", errno: errno)
    /// ```
    init(_ kind: Kind, path: String, failedTo what: String, errno code: Int32) {
        let specific: Kind? =
            switch code {
            case ENOSPC, EDQUOT: .diskFull
            case EROFS: .readOnly
            default: Self.isProtectedData(openFailure: code, path: path) ? .protectedDataUnavailable : nil
            }
        self.init(specific ?? kind, path: path, "cannot \(what): \(Self.systemReason(code))")
    }

    var description: String { "\(path): \(kind) (\(message))" }

    /// The system's words for an `errno` value.
    static func systemReason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Whether this platform protects files by class (so a refused open can mean "locked").
    ///
    /// Not tvOS: an Apple TV has no passcode, so its files are never locked away, and an `EPERM`
    /// there is the sandbox's (a folder the app may look at but not write), never protected data.
    static var platformProtectsFiles: Bool {
        #if os(iOS) || os(watchOS) || os(visionOS)
            true
        #else
            false
        #endif
    }

    /// Whether a failure to open `path` with `errno` means its data is locked away (a file
    /// protected by class, before the device's first unlock) — the one place that decides it.
    ///
    /// ```swift
    /// JournalError.isProtectedData(openFailure: EPERM, path: path)  // false on Linux
    /// ```
    ///
    /// Only `EPERM`, and only where files are protected by class. The sandbox refuses with
    /// `EPERM` too (an App Group the app is not entitled to), but then even the file's metadata
    /// is refused, while a protected file (or, for one not made yet, its folder) can still be
    /// looked at: `lookUp` (`stat`'s `errno`, 0 when it succeeds) tells the two apart.
    static func isProtectedData(
        openFailure errno: Int32, path: String, platformProtectsFiles: Bool = platformProtectsFiles,
        lookUp: (String) -> Int32 = metadataFailure
    ) -> Bool {
        guard platformProtectsFiles, errno == EPERM else { return false }
        switch lookUp(path) {
        case 0: return true
        case ENOENT:
            let folder = (path as NSString).deletingLastPathComponent
            return lookUp(folder.isEmpty ? "." : folder) == 0
        default: return false
        }
    }

    /// `stat`'s `errno` for `path`, or 0 when it succeeds.
    static func metadataFailure(_ path: String) -> Int32 {
        SystemCall.stat(path) == nil ? errno : 0
    }
}
