import CPrefsShared
import Dispatch
import Foundation

/// How the stores on one SQLite file tell each other "I committed", so that nobody polls.
///
/// Design (the first step towards the shared journal of "SQLiteStore at memory speed"):
///
/// - **Linux.** A small file beside the database, `<name>-prefs` (4 KiB, 0600, like SQLite's own
///   companions), mapped shared by every process that opens the store. Its header holds a magic
///   (`PrefsSig`), a format version and, at byte 16, a 32-bit change counter. A writer adds one
///   to the counter after each commit and wakes every futex waiter on it. Each open store has one
///   thread asleep in a futex wait on the counter; it wakes when the counter moves (then the store
///   catches up, reading only the rows that changed) or after `refreshInterval` at the latest,
///   a safety net for writers that do not signal (an older release) — nothing else wakes it.
/// - **Apple platforms.** notify(3): a writer posts a notification named after the database
///   file's device and inode; each open store holds a registration whose descriptor a dispatch
///   source watches, and a timer at `refreshInterval` is the same safety net.
///
/// Invariants: the counter only grows (wrapping is harmless: waiters compare for inequality); a
/// watcher reads the counter *before* it first looks for changes, so no commit falls between
/// the look and the wait; a wake-up never carries data, it only says "look at
/// `PRAGMA data_version`", so a spurious wake-up costs one cheap check and a missed one (a
/// writer that does not signal) a delay of at most `refreshInterval`, never a wrong value; the
/// signal file holds no data, so deleting it loses nothing (the next store to open creates it).
final class ChangeSignal: @unchecked Sendable {
    private static let size = 4096
    private static let magic = Array("PrefsSig".utf8)
    private static let version: UInt32 = 1
    private static let counterOffset = 16

    /// The mapping (Linux), or `nil` elsewhere or when the file could not be made.
    private let mapping: UnsafeMutableRawPointer?
    /// The notify(3) name (Apple platforms).
    private let notificationName: String
    /// How many times this store posted (a private word, bumped before the shared counter): a
    /// watcher that finds the counter moved by exactly its own posts has nothing to look at.
    private let ownPosts = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)

    /// Opens (creating it when needed) the signal of the database at `databasePath`.
    ///
    /// `file` is the database file's identity. Where no shared counter can be made (a read-only
    /// folder, say), watches rely on their safety-net interval (and notify(3) on Apple platforms).
    init(databasePath: String, file: FileIdentity?) {
        ownPosts.initialize(to: 0)
        notificationName = "prefs.sqlite.\(file?.device ?? 0).\(file?.inode ?? 0)"
        #if os(Linux)
            mapping = file == nil ? nil : Self.map(databasePath + "-prefs")
        #else
            mapping = nil
        #endif
    }

    deinit {
        if let mapping { munmap(mapping, Self.size) }
        ownPosts.deallocate()
    }

    /// Maps the signal file, writing its header when the file is new; `nil` when it cannot be
    /// opened or belongs to something else.
    private static func map(_ path: String) -> UnsafeMutableRawPointer? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        // Look before changing anything: a file that is not ours is left exactly as it was.
        var head = [UInt8](repeating: 0, count: 8)
        let count = pread(descriptor, &head, 8, 0)
        if count > 0 && !head.allSatisfy({ $0 == 0 }) && head != magic {
            FileHandle.standardError.write(
                Data(
                    "prefs: \(path) is not a Prefs signal file; changes are found every refreshInterval\n"
                        .utf8))
            return nil
        }
        if info.st_size < size {
            // Growing only: a file another process already grew keeps its contents.
            guard ftruncate(descriptor, off_t(size)) == 0 else { return nil }
        }
        guard let mapping = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
            mapping != MAP_FAILED
        else { return nil }
        let header = UnsafeMutableRawBufferPointer(start: mapping, count: 16)
        if header.prefix(8).allSatisfy({ $0 == 0 }) {
            // New: every process that gets here writes the same bytes.
            header.copyBytes(from: magic)
            header.storeBytes(of: version.littleEndian, toByteOffset: 8, as: UInt32.self)
        } else if !header.prefix(8).elementsEqual(magic) {
            FileHandle.standardError.write(
                Data(
                    "prefs: \(path) is not a Prefs signal file; changes are found every refreshInterval\n"
                        .utf8))
            munmap(mapping, size)
            return nil
        }
        return mapping
    }

    private var counter: UnsafeMutablePointer<UInt32>? {
        mapping.map { ($0 + Self.counterOffset).assumingMemoryBound(to: UInt32.self) }
    }

    /// Tells every store on the file, in every process, that a commit happened.
    func post() {
        if let counter {
            _ = prefs_atomic_increment(ownPosts)
            _ = prefs_atomic_increment(counter)
            _ = prefs_futex_wake_all(counter)
        }
        #if canImport(Darwin)
            _ = prefs_notify_post(notificationName)
        #endif
    }

    /// Calls `onChange` after every signal (and at least every `interval`), on a thread or queue of
    /// its own, until the returned watch is stopped.
    func watch(interval: Duration, onChange: @escaping @Sendable () -> Void) -> Watch {
        Watch(signal: self, interval: interval, onChange: onChange)
    }

    /// A running watch: one sleeping thread (Linux) or a dispatch source (Apple platforms).
    final class Watch: @unchecked Sendable {
        private let signal: ChangeSignal
        private let stopped = Locked(false)
        private let finished = DispatchSemaphore(value: 0)
        private var sources: [any DispatchSourceProtocol] = []
        private var token: Int32 = -1

        fileprivate init(signal: ChangeSignal, interval: Duration, onChange: @escaping @Sendable () -> Void) {
            self.signal = signal
            let milliseconds = Int64(max(1, interval.wholeMilliseconds))
            if signal.counter != nil {
                // The thread holds the signal, so the mapping outlives it.
                let thread = Thread { [signal, stopped, finished] in
                    defer { finished.signal() }
                    guard let counter = signal.counter else { return }
                    // Read the counter, then look once: whatever was committed before the counter
                    // was read (since the store loaded, or while this thread was starting) is
                    // found now, and any later commit moves the counter past `seen`.
                    var seen = prefs_atomic_load(counter)
                    var seenOwn = prefs_atomic_load(signal.ownPosts)
                    onChange()
                    while !stopped.withLock({ $0 }) {
                        let timedOut = prefs_futex_wait(counter, seen, milliseconds) == 1
                        if stopped.withLock({ $0 }) { break }
                        // The counter first, then the own posts (bumped before the counter): a
                        // foreign commit is never taken for one of ours for longer than it takes
                        // our next post to land.
                        let now = prefs_atomic_load(counter)
                        let own = prefs_atomic_load(signal.ownPosts)
                        let onlyOurs = now &- seen == own &- seenOwn
                        if now != seen || timedOut {
                            seen = now
                            seenOwn = own
                            if timedOut || !onlyOurs { onChange() }
                        }
                    }
                }
                thread.name = "prefs.sqlite.watch"
                thread.start()
                return
            }
            // No shared counter: a timer (the safety net alone), and on Apple platforms notify(3).
            let queue = DispatchQueue(label: "prefs.sqlite.watch")
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
            timer.setEventHandler(handler: onChange)
            timer.resume()
            sources.append(timer)
            #if canImport(Darwin)
                var descriptor: Int32 = -1
                if prefs_notify_register(signal.notificationName, &descriptor, &token) == 0 {
                    let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
                    source.setEventHandler {
                        var posted: Int32 = 0
                        _ = read(descriptor, &posted, MemoryLayout<Int32>.size)
                        onChange()
                    }
                    source.resume()
                    sources.append(source)
                }
            #endif
            // Commits made before the registration are found by one look now.
            queue.async(execute: onChange)
            finished.signal()
        }

        /// Stops the watch and waits until `onChange` will not be called again.
        func stop() {
            let wasStopped = stopped.withLock { stopped in
                defer { stopped = true }
                return stopped
            }
            guard !wasStopped else { return }
            if let counter = signal.counter {
                // Wakes every waiter on the file: the others see no change and sleep again.
                _ = prefs_futex_wake_all(counter)
            }
            for source in sources { source.cancel() }
            if token >= 0 { _ = prefs_notify_cancel(token) }
            finished.wait()
        }

        deinit {
            stop()
        }
    }
}
