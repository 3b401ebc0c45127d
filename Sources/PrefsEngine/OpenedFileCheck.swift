import CPrefsShared
import Dispatch
import Foundation

/// Whether the store's file is still the one at its path, checked before every write as cheaply
/// as the platform allows, so that no write is acknowledged after the file was deleted, replaced
/// or moved away.
///
/// ```swift
/// let check = OpenedFileCheck(path: path, opened: FileIdentity(path: path))
/// var looks = OpenedFileCheck.Looks()
/// try check.verify(&looks)
/// ```
///
/// - **Linux**: an `O_PATH` descriptor of the file, watched through the process's
///   ``FileEvents``: the kernel queues an event while the file is deleted, moved, or has
///   another file moved over its path, so an empty queue (one `epoll_wait` that does not wait)
///   says the file is where it was. After any event, `fstat` of the descriptor (a link count of zero: deleted or replaced)
///   and a `stat` of the path (another file there, or none). Where the file cannot be watched,
///   the `fstat` runs before every write. An `O_PATH` descriptor takes no part in SQLite's POSIX
///   locks, so closing it cannot release them. A folder above the file renamed raises no event
///   on the file: the path is also looked up once per tick of the kernel's coarse clock (every
///   1–4 ms) while writes go on.
/// - **Elsewhere**: `stat` of the path before each write, comparing device and inode.
final class OpenedFileCheck: Sendable {
    let path: String
    let opened: FileIdentity?
    /// The `O_PATH` descriptor (Linux), or -1.
    private let descriptor: Int32
    /// The queue that watches the descriptor's file; `nil` when not watched.
    ///
    /// (Apart from its watch, not in a tuple: bound out of an optional tuple on every write, the
    /// queue was retained and released each time.)
    private let events: FileEvents?
    /// The watch of the file in ``events``.
    private let watch: Int32

    /// What the checks of one store remember between writes (kept under its writer lock).
    struct Looks: Sendable {
        /// When the path was last looked up (nanoseconds of a monotonic clock).
        var pathLookedUp: UInt64 = 0
        /// The ``FileEvents`` mark of the last check that looked at the file; `nil` before one.
        var eventsMark: UInt64? = nil

        init() {}
    }

    /// A check of `path`, which names the file `opened` now; `watched: false` does without
    /// ``FileEvents`` (as where the kernel refuses a watch).
    init(path: String, opened: FileIdentity?, watched: Bool = true) {
        self.path = path
        self.opened = opened
        #if os(Linux)
            let descriptor = prefs_open_path_only(path)
            // Only when it is the file the store opened (nothing replaced it in between).
            self.descriptor =
                descriptor >= 0 && FileIdentity(descriptor: descriptor) == opened ? descriptor : -1
            if descriptor >= 0 && self.descriptor < 0 { SystemCall.close(descriptor) }
            if watched, self.descriptor >= 0, let queue = FileEvents.shared,
                let watch = queue.watch(self.descriptor)
            {
                events = queue
                self.watch = watch
            } else {
                events = nil
                watch = -1
            }
        #else
            descriptor = -1
            events = nil
            watch = -1
        #endif
    }

    deinit {
        events?.unwatch(watch)
        if descriptor >= 0 { SystemCall.close(descriptor) }
    }

    /// Whether the kernel tells this check of changes to the file (else it looks every time).
    var isWatched: Bool { events != nil }

    /// Throws ``JournalError/Kind/replaced`` when the path no longer names the opened file.
    func verify(_ looks: inout Looks) throws {
        guard let opened else { return }
        if descriptor >= 0 {
            if let mark = looks.eventsMark, events?.isQuiet(since: mark) == true {
                // Nothing happened to any watched file since the last look at this one.
            } else {
                let mark = events?.discardWaiting()
                if let info = SystemCall.fstat(descriptor), info.st_nlink == 0 { throw replaced(by: nil) }
                if let mark {
                    // The event may have been a move: look the path up now, before trusting it.
                    try verifyPath(opened)
                    looks.eventsMark = mark
                    looks.pathLookedUp = Self.coarseNanoseconds()
                }
            }
            let now = Self.coarseNanoseconds()
            guard now &- looks.pathLookedUp >= 1_000_000 else { return }
            looks.pathLookedUp = now
        }
        try verifyPath(opened)
    }

    /// A monotonic clock that ticks every 1–4 ms (Linux's coarse clock, a fifth of the precise
    /// one's cost on every write): it only spaces out the backstop look-ups of the path.
    private static func coarseNanoseconds() -> UInt64 {
        #if os(Linux)
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
            return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        #else
            return DispatchTime.now().uptimeNanoseconds
        #endif
    }

    private func verifyPath(_ opened: FileIdentity) throws {
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
