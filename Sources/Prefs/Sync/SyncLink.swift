import Foundation
import PrefsEngine
import PrefsSupport

/// Which process of a machine talks to the remote for a local store several processes share (a
/// `SQLiteStore` file): the one holding an exclusive `flock` on a file beside the store.
///
/// The others write their synced values, stamps and pending marks into the shared store as
/// usual; the holder hears of them through the store (as it hears any other process's write)
/// and sends them. The kernel lets the lock go when its process ends, `kill -9` included, and
/// the others try for it twice a second, so one takes over within a second. The fleet's
/// connections then grow with machines, not processes.
///
/// ```swift
/// let link = SyncLink(path: store.path + ".sync-link")
/// if link?.tryToHold() == true { print("this process talks to the remote") }
/// ```
final class SyncLink: Sendable {
    private let descriptor: Int32
    private let held = AtomicWord()

    /// The link of the store at `path`'s file; `nil` when the file cannot be opened (the store
    /// then talks to the remote from this process, as a store no other process shares would).
    init?(path: String) {
        descriptor = SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
    }

    deinit {
        SystemCall.close(descriptor)  // lets the lock go
    }

    /// Whether this process holds the link, taking it when it is free.
    func tryToHold() -> Bool {
        if held.load() == 1 { return true }
        guard SystemCall.flock(descriptor, LOCK_EX | LOCK_NB) else { return false }
        held.store(1)
        return true
    }

    var isHeld: Bool { held.load() == 1 }

    /// Whether a process holds the link of the store whose link file is `path` (for another
    /// process: the `prefs` tool).
    static func isHeld(path: String) -> Bool {
        // Read-only is enough for flock: a tool that may not write the folder still asks.
        let descriptor = SystemCall.open(path, O_RDONLY | O_CLOEXEC, 0)
        guard descriptor >= 0 else { return false }  // never made: never held
        defer { SystemCall.close(descriptor) }
        guard SystemCall.flock(descriptor, LOCK_EX | LOCK_NB) else { return true }
        _ = SystemCall.flock(descriptor, LOCK_UN)
        return false
    }
}
