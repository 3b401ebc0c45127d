import CPrefsShared
import Foundation
import PrefsSupport

/// The journal's cross-process lock, of the kind its header names.
///
/// Two kinds, one interface (the code is `prefs_lock_acquire` in `CPrefsShared`):
///
/// - **native** (Linux): a robust, process-shared, error-checking pthread mutex in the header. A
///   holder killed with `kill -9` hands it on (`EOWNERDEAD`).
/// - **flock** (Apple platforms, which have no robust mutex; and Linux when the environment has
///   `PREFS_JOURNAL_LOCK=flock`, so CI runs Apple's lock): a ``ThreadLock`` per journal file,
///   shared by every store of the process that opens the file, then `flock` on the store's own
///   descriptor. `flock` belongs to the open file description, so without the thread lock a writer
///   and a checkpoint of one store would both "hold" it, and the first to let go would release it
///   for every process.
///
/// Every process using a journal must use the same kind: the kind is in the header, and an
/// opener that would use another is refused unless nobody else has the file open.
struct JournalLock {
    /// `PREFS_LOCK_KIND_NATIVE` or `PREFS_LOCK_KIND_FLOCK`.
    let kind: Int32
    /// The header's mutex (native kind).
    let memory: UnsafeMutableRawPointer
    /// The process's lock for this journal file (flock kind; made for every journal, since
    /// opening on Apple platforms takes it too).
    let thread: ThreadLock
    let descriptor: Int32

    /// The kind this process uses for a journal it creates (or is alone with).
    static var processKind: Int32 { prefs_lock_kind_of_process() }

    /// The kind's name, in messages.
    static func name(of kind: Int32) -> String {
        kind == Int32(PREFS_LOCK_KIND_FLOCK) ? "flock" : "the robust mutex"
    }

    /// Takes the lock, waiting at most `timeoutMilliseconds`; one of the `PREFS_LOCK_*` outcomes.
    func acquire(timeoutMilliseconds: Int64) -> Int32 {
        prefs_lock_acquire(kind, memory, thread.pointer, descriptor, timeoutMilliseconds)
    }

    func release() { prefs_lock_release(kind, memory, thread.pointer, descriptor) }
}

/// A lock among the threads of this process for one journal file: it knows its holder (a nested
/// acquisition is refused at once instead of waiting for itself) and gives up at a deadline.
///
/// One per file per process: every ``Journal`` of the same file shares it, through
/// ``forFile(_:)``, so two stores of one file in one process exclude each other as two processes do.
final class ThreadLock: @unchecked Sendable {
    // @unchecked: the C lock is thread-safe by construction (a pthread mutex and condition).
    let pointer: OpaquePointer

    private init?() {
        guard let made = prefs_thread_lock_create() else { return nil }
        pointer = made
    }

    deinit { prefs_thread_lock_destroy(pointer) }

    /// Whether the calling thread holds it.
    var isHeldByCurrentThread: Bool { prefs_thread_lock_is_held_by_caller(pointer) != 0 }

    private final class Weak: @unchecked Sendable {
        // @unchecked: only touched under `registry`'s lock.
        weak var lock: ThreadLock?
        init(_ lock: ThreadLock) { self.lock = lock }
    }

    private static let registry = Locked<[FileIdentity: Weak]>([:])

    /// The process's lock for the file `file` (`nil`: a lock of its own, for a file whose
    /// identity `fstat` could not give), or `nil` when no lock could be made.
    static func forFile(_ file: FileIdentity?) -> ThreadLock? {
        guard let file else { return ThreadLock() }
        return registry.withLock { locks in
            if let existing = locks[file]?.lock { return existing }
            guard let made = ThreadLock() else { return nil }
            // Entries of files no store uses any more are dropped as new ones come.
            if locks.count > 64 { locks = locks.filter { $0.value.lock != nil } }
            locks[file] = Weak(made)
            return made
        }
    }
}
