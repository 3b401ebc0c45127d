import Foundation

/// What kind of file a mode names, for refusing anything but a regular file.
enum FileKind {
    /// What is wrong with a file of mode `mode` where the store wants a regular file, or `nil`.
    ///
    /// ```swift
    /// FileKind.problem(mode: S_IFLNK | 0o644)  // "it is a symbolic link"
    /// ```
    static func problem(mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFLNK: "it is a symbolic link"
        case S_IFDIR: "it is a folder"
        case S_IFIFO: "it is a FIFO"
        case S_IFSOCK: "it is a socket"
        case S_IFCHR, S_IFBLK: "it is a device"
        default: "it is not a regular file"
        }
    }
}
