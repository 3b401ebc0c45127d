import Foundation

/// A file's metadata, as `stat(2)` gives it.
package typealias FileStatus = stat

/// Every system call the engine and the SQLite store make on files, in one place (the shape of
/// swift-nio's `System.swift`).
///
/// Each call that a signal can interrupt is made again when it fails with `EINTR`, so a signal
/// handler in the program (a profiler's, a debugger's) never turns into a failed open or a short
/// write. A failure leaves `errno` as the call set it, for ``JournalError/init(_:path:failedTo:errno:)``,
/// the one place that maps it to a kind (a full disk, a read-only file system, locked data).
///
/// ```swift
/// let descriptor = SystemCall.open(path, O_RDONLY | O_CLOEXEC)
/// if let info = SystemCall.fstat(descriptor) { print(info.st_size) }
/// SystemCall.close(descriptor)
/// ```
package enum SystemCall {
    /// `body` again for as long as it fails with `EINTR`.
    @inline(__always)
    private static func retrying<Result: BinaryInteger>(_ body: () -> Result) -> Result {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    /// `open(2)`: a descriptor, or -1 with `errno` set.
    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        retrying { Foundation.open(path, flags, mode) }
    }

    /// `flock(2)`: whether the lock was taken (or let go); `false` with `errno` set, as
    /// `EWOULDBLOCK` for a lock another holds under `LOCK_NB`.
    package static func flock(_ descriptor: Int32, _ operation: Int32) -> Bool {
        retrying { lockWholeFile(descriptor, operation) } == 0
    }

    /// `close(2)`, never repeated: Linux and Apple platforms release the descriptor even when
    /// the call reports `EINTR`, and closing it again could close another thread's new one.
    package static func close(_ descriptor: Int32) {
        _ = Foundation.close(descriptor)
    }

    /// `pread(2)`: the bytes read, or -1 with `errno` set.
    package static func pread(
        _ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int
    ) -> Int {
        retrying { Foundation.pread(descriptor, buffer, count, off_t(offset)) }
    }

    /// `pwrite(2)`: the bytes written, or -1 with `errno` set.
    package static func pwrite(
        _ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int, at offset: Int
    ) -> Int {
        retrying { Foundation.pwrite(descriptor, buffer, count, off_t(offset)) }
    }

    /// `read(2)`: the bytes read, or -1 with `errno` set (`EAGAIN` on an empty non-blocking pipe).
    package static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        retrying { Foundation.read(descriptor, buffer, count) }
    }

    /// `write(2)`: the bytes written, or -1 with `errno` set.
    package static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        retrying { Foundation.write(descriptor, buffer, count) }
    }

    /// `fstat(2)`: the file's metadata, or `nil` with `errno` set.
    static func fstat(_ descriptor: Int32) -> FileStatus? {
        var info = FileStatus()
        return retrying { Foundation.fstat(descriptor, &info) } == 0 ? info : nil
    }

    /// `stat(2)`: the metadata of what `path` names (through links), or `nil` with `errno` set.
    package static func stat(_ path: String) -> FileStatus? {
        var info = FileStatus()
        return retrying { statOfPath(path, &info) } == 0 ? info : nil
    }

    /// `lstat(2)`: the metadata of `path` itself (a link is not followed), or `nil` with `errno`.
    static func lstat(_ path: String) -> FileStatus? {
        var info = FileStatus()
        return retrying { Foundation.lstat(path, &info) } == 0 ? info : nil
    }

    /// `realpath(3)`: `path` with every symbolic link, `.` and `..` resolved, or `nil` with
    /// `errno` set (the path, or a folder on it, does not exist).
    package static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `ftruncate(2)`: true when the file now has `size` bytes.
    static func ftruncate(_ descriptor: Int32, _ size: Int) -> Bool {
        retrying { Foundation.ftruncate(descriptor, off_t(size)) } == 0
    }

    /// `fsync(2)`: true when the file reached the medium (as far as `fsync` goes).
    static func fsync(_ descriptor: Int32) -> Bool {
        retrying { Foundation.fsync(descriptor) } == 0
    }

    /// `rename(2)`: true when `from` is now at `to`.
    static func rename(_ from: String, _ to: String) -> Bool {
        retrying { Foundation.rename(from, to) } == 0
    }

    /// `mmap(2)` of `count` bytes of the file, shared: the mapping, or `nil` with `errno` set.
    static func mapShared(_ descriptor: Int32, count: Int, writable: Bool) -> UnsafeMutableRawPointer? {
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let mapping = mmap(nil, count, protection, MAP_SHARED, descriptor, 0),
            mapping != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED, spelled the same everywhere
        else { return nil }
        return mapping
    }

    /// `mmap(2)` of the file over an existing mapping (`MAP_FIXED`), so every pointer into it
    /// shows the file again: whether it was mapped.
    static func mapSharedAgain(
        _ mapping: UnsafeMutableRawPointer, _ descriptor: Int32, count: Int, writable: Bool
    ) -> Bool {
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        let result = mmap(mapping, count, protection, MAP_SHARED | MAP_FIXED, descriptor, 0)
        return result == mapping
    }

    /// `munmap(2)`.
    static func unmap(_ mapping: UnsafeMutableRawPointer, count: Int) {
        _ = munmap(mapping, count)
    }

    /// `pipe(2)` whose two ends neither block nor pass to child processes: `(read, write)`, or
    /// `nil` with `errno` set.
    package static func nonBlockingPipe() -> (read: Int32, write: Int32)? {
        var descriptors: [Int32] = [-1, -1]
        guard Foundation.pipe(&descriptors) == 0 else { return nil }
        for descriptor in descriptors {
            let flags = retrying { fcntl(descriptor, F_GETFL) }
            _ = retrying { fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
            _ = retrying { fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        }
        return (descriptors[0], descriptors[1])
    }
}

/// `flock(2)` itself: inside ``SystemCall`` the name is the wrapper's (and unqualified here: the
/// C library's `struct flock`, for `fcntl`, shares it).
private func lockWholeFile(_ descriptor: Int32, _ operation: Int32) -> Int32 { flock(descriptor, operation) }

/// `stat(2)` itself: inside ``SystemCall`` the name is the wrapper's.
private func statOfPath(_ path: String, _ info: inout FileStatus) -> Int32 { stat(path, &info) }
