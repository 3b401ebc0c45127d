import Foundation

/// A file's device and inode: what stays the same while a path keeps naming the same file.
///
/// ```swift
/// let descriptor = open(path, O_RDONLY)
/// FileIdentity(path: path) == FileIdentity(descriptor: descriptor)  // the path still names it
/// ```
package struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the file open at `descriptor`, or `nil` when `fstat` fails.
    init?(descriptor: Int32) {
        guard let info = SystemCall.fstat(descriptor) else { return nil }
        self.init(info)
    }

    /// The identity of the file at `path` now, or `nil` when there is none.
    package init?(path: String) {
        guard let info = SystemCall.stat(path) else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}
