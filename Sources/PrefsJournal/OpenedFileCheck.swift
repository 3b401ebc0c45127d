import CPrefsShared
import Dispatch
import Foundation

/// Whether the store's file is still the one at its path, checked before every write as cheaply
/// as the platform allows, so that no write is acknowledged after the file was deleted or
/// replaced.
///
/// ```swift
/// let check = OpenedFileCheck(path: path, opened: FileIdentity(path: path))
/// try check.verify(lastFullCheck: &lastCheck)
/// ```
///
/// - **Linux**: an `O_PATH` descriptor of the file, and `fstat` on it before each write: the
///   file's link count drops to zero when it is deleted or another file is moved over its path
///   (no path walk, about half the cost of `stat`). An `O_PATH` descriptor takes no part in
///   SQLite's POSIX locks, so closing it cannot release them. The rarer case of the file moved
///   away and another put in its place keeps its links: a `stat` of the path finds it, at most
///   once a millisecond.
/// - **Elsewhere**: `stat` of the path before each write, comparing device and inode.
package final class OpenedFileCheck: Sendable {
    let path: String
    let opened: FileIdentity?
    /// The `O_PATH` descriptor (Linux), or -1.
    private let descriptor: Int32

    package init(path: String, opened: FileIdentity?) {
        self.path = path
        self.opened = opened
        #if os(Linux)
            let descriptor = prefs_open_path_only(path)
            // Only when it is the file the store opened (nothing replaced it in between).
            self.descriptor =
                descriptor >= 0 && FileIdentity(descriptor: descriptor) == opened ? descriptor : -1
            if descriptor >= 0 && self.descriptor < 0 { close(descriptor) }
        #else
            descriptor = -1
        #endif
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Throws ``JournalError/Kind/replaced`` when the path no longer names the opened file.
    ///
    /// `lastFullCheck` is when the path was last looked up (nanoseconds of a monotonic clock).
    package func verify(lastFullCheck: inout UInt64) throws {
        guard let opened else { return }
        if descriptor >= 0 {
            var info = stat()
            if fstat(descriptor, &info) == 0 && info.st_nlink == 0 { throw replaced(by: nil) }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now &- lastFullCheck >= 1_000_000 else { return }
            lastFullCheck = now
        }
        let found = FileIdentity(path: path)
        guard found != opened else { return }
        throw replaced(by: found)
    }

    private func replaced(by found: FileIdentity?) -> JournalError {
        JournalError(
            .replaced, path: path,
            found == nil ? "no file is at the path any more" : "another file is at the path now")
    }
}
