import Foundation
import PrefsEngine
import PrefsSupport

/// Which process of a machine talks to the remote for a local store several processes share (a
/// `SQLiteStore` file): the holder of a lease kept in a file beside the store.
///
/// The others write their synced values, stamps and pending marks into the shared store as
/// usual; the holder hears of them through the store (as it hears any other process's write)
/// and sends them. The fleet's connections then grow with machines, not processes.
///
/// No file lock is held between calls: an app or extension suspended while holding one in an
/// App Group container is ended by the system (`0xdead10cc`). The lease is a record in the file
/// (the holder's token and process, and when the lease ends), read and written under an
/// exclusive `flock` held only for that read and write, never waited on. The holder renews it a
/// few times per lease; a holder that stops (killed, suspended, stopped) stops renewing, and the
/// first other process to look after the lease ended takes it over. A holder that comes back to
/// find the lease taken gives the link up. A holder that ends normally gives the lease back.
///
/// ```swift
/// let link = SyncLink(path: store.path + ".sync-link")
/// if link?.tryToHold() == true { print("this process talks to the remote") }
/// ```
final class SyncLink: Sendable {
    /// How long a lease lasts unless renewed.
    ///
    /// That is how long the machine may go without a link after its holder stops. The holder
    /// renews it at a third of that.
    static let defaultLease: Duration = .seconds(6)

    private let descriptor: Int32
    private let lease: Duration
    /// This link's token in the lease (two links in one process are two holders).
    private let token = UUID()
    private let held = AtomicWord()
    /// When the lease this process last saw ends, in milliseconds since 1970 (0: none seen).
    private let seenExpiry = AtomicWord()
    /// Since when this process's sync in progress runs, in milliseconds since 1970 (0: none);
    /// each renewal writes it into the lease, where other processes (the `prefs` tool) read it.
    let syncingSince = AtomicWord()
    /// The wall clock, in milliseconds since 1970 (a test's own clock in tests).
    private let now: @Sendable () -> UInt64
    /// Stands in for the system's expiring activities in tests (`nil`: the platform's).
    private let expiringActivity: ExpiringActivity.System?

    /// The link of the store at `path`'s file; `nil` when the file cannot be opened, or is a
    /// symbolic link, never followed (the store then talks to the remote from this process, as a
    /// store no other process shares would).
    init?(
        path: String, lease: Duration = SyncLink.defaultLease,
        now: @escaping @Sendable () -> UInt64 = SyncLink.wallClock,
        expiringActivity: ExpiringActivity.System? = nil
    ) {
        descriptor = SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { return nil }
        self.lease = lease
        self.now = now
        self.expiringActivity = expiringActivity
    }

    deinit {
        // Gives the lease back, so another process need not wait for it to end: a file lock, so
        // in the system's background time (an app suspended holding one in an App Group
        // container is ended); refused or taken back first, the lease just runs out.
        if held.load() == 1 {
            let (descriptor, token) = (descriptor, token)
            ExpiringActivity.runAndWait("giving back the sync link", system: expiringActivity) { expiry in
                _ = expiry.step {
                    Self.withRecord(descriptor) { record in
                        guard record.token == token, record.expiry != 0 else { return nil }
                        var freed = record
                        freed.expiry = 0
                        return freed
                    }
                }
            }
        }
        SystemCall.close(descriptor)
    }

    /// The wall clock in milliseconds since 1970.
    @Sendable static func wallClock() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// Whether this process holds the link, taking the lease when it is free or has ended and
    /// renewing it when it is this link's.
    ///
    /// When the lease cannot be read this moment (another process is reading it), the answer is
    /// the last one: a holder stays the holder until a renewal finds the lease taken.
    @discardableResult
    func tryToHold() -> Bool {
        let start = now()
        let outcome = withRecord { record in
            let free = !record.isLive(at: start, lease: leaseMilliseconds)
            guard free || record.token == token else {
                seenExpiry.store(record.expiry)
                return nil
            }
            return LeaseRecord(
                token: token, process: getpid(), expiry: start + leaseMilliseconds,
                syncingSince: syncingSince.load())
        }
        switch outcome {
        case .busy: return isHeld
        case .unchanged: held.store(0)
        case .written(let record):
            seenExpiry.store(record.expiry)
            held.store(1)
        }
        return isHeld
    }

    var isHeld: Bool { held.load() == 1 }

    /// How long to wait before this process tries for the link again: until the lease it saw
    /// ends (a little after), at most one lease.
    var waitBeforeTrying: Duration {
        let expiry = seenExpiry.load()
        let current = now()
        let remaining = expiry > current ? Duration.milliseconds(Int64(clamping: expiry - current)) : .zero
        return min(remaining, lease) + .milliseconds(50)
    }

    /// How often the holder renews the lease.
    var renewalInterval: Duration { lease / 3 }

    /// The process holding a live lease on the store whose link file is `path`, and since when
    /// its sync in progress runs, as of its last renewal (for another process: the `prefs`
    /// tool); `nil` when none holds it.
    ///
    /// A holder of an earlier release, which kept a lock for its life, is process 0.
    static func holder(path: String, lease: Duration = defaultLease) -> Holder? {
        let descriptor = SystemCall.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0)
        guard descriptor >= 0 else { return nil }  // never made: never held
        defer { SystemCall.close(descriptor) }
        // Read-only is enough for flock: a tool that may not write the folder still asks. A
        // holder renewing its lease holds the lock for one read and write: a few quick tries.
        // Still locked, it is a holder of an earlier release, which kept the lock for its life.
        guard tryLock(descriptor, LOCK_SH, attempts: 20) else { return Holder(process: 0, syncingSince: nil) }
        defer { _ = SystemCall.flock(descriptor, LOCK_UN) }
        guard let record = LeaseRecord.read(descriptor),
            record.isLive(at: wallClock(), lease: UInt64(max(0, lease.wholeMilliseconds)))
        else { return nil }
        return Holder(
            process: record.process,
            syncingSince: record.syncingSince == 0
                ? nil : Date(timeIntervalSince1970: Double(record.syncingSince) / 1000))
    }

    /// Takes the link file's `flock` (`LOCK_EX` or `LOCK_SH`) without waiting on it: up to
    /// `attempts` tries a millisecond apart (a holder keeps it for one read and write).
    private static func tryLock(_ descriptor: Int32, _ operation: Int32, attempts: Int) -> Bool {
        for attempt in 0..<attempts {
            if attempt > 0 { usleep(1_000) }
            if SystemCall.flock(descriptor, operation | LOCK_NB) { return true }
        }
        return false
    }

    /// Who holds a link, as ``holder(path:lease:)`` reads it.
    struct Holder: Equatable {
        let process: Int32
        let syncingSince: Date?
    }

    /// What reading the lease came to.
    private enum Outcome {
        /// Another process was reading or writing it this moment (or an earlier release of
        /// Prefs holds its lock for its life): nothing was read.
        case busy
        /// Read, and left as it was.
        case unchanged
        /// Read, and this record written in its place.
        case written(LeaseRecord)
    }

    /// Reads the lease under the file's lock, held only for this read and write (never waited
    /// for), and writes what `change` returns (`nil`: nothing).
    private func withRecord(_ change: (LeaseRecord) -> LeaseRecord?) -> Outcome {
        Self.withRecord(descriptor, change)
    }

    /// ``withRecord(_:)`` on the link file open as `descriptor`.
    private static func withRecord(_ descriptor: Int32, _ change: (LeaseRecord) -> LeaseRecord?) -> Outcome {
        // A few quick tries: the lock is held for one read and one write of 48 bytes.
        guard tryLock(descriptor, LOCK_EX, attempts: 5) else { return .busy }
        defer { _ = SystemCall.flock(descriptor, LOCK_UN) }
        let current =
            LeaseRecord.read(descriptor) ?? LeaseRecord(token: UUID(), process: 0, expiry: 0, syncingSince: 0)
        guard let next = change(current), next.write(descriptor) else { return .unchanged }
        return .written(next)
    }

    /// The lease in milliseconds.
    private var leaseMilliseconds: UInt64 { UInt64(max(0, lease.wholeMilliseconds)) }
}

/// The lease in a link file: 8 bytes of magic, the holder's token (16), its process (4), 4
/// reserved, when the lease ends (8, milliseconds since 1970), and since when the holder's sync
/// in progress runs (8, milliseconds since 1970, 0 for none), little-endian.
///
/// Releases before the last field wrote 40 bytes and read the first 40: each reads the other's.
struct LeaseRecord: Equatable {
    static let magic: UInt64 = 0x4B4E_494C_5346_5250  // "PRFSLINK"
    static let size = 48
    /// The size before `syncingSince`.
    static let firstSize = 40

    var token: UUID
    var process: Int32
    var expiry: UInt64
    var syncingSince: UInt64

    /// Whether the lease has not ended at `now`.
    ///
    /// A lease that ends more than one lease from now was written by a clock that has since gone
    /// back: it is over (never held for hours).
    func isLive(at now: UInt64, lease: UInt64) -> Bool {
        expiry > now && expiry - now <= lease
    }

    /// The record in the file (`nil`: none, or not a lease, which counts as free).
    static func read(_ descriptor: Int32) -> LeaseRecord? {
        var bytes = [UInt8](repeating: 0, count: size)
        let count = bytes.withUnsafeMutableBytes {
            SystemCall.pread(descriptor, $0.baseAddress!, size, at: 0)
        }
        guard count >= firstSize else { return nil }
        return bytes.withUnsafeBytes { raw in
            guard UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)) == magic else { return nil }
            let token = raw.loadUnaligned(fromByteOffset: 8, as: uuid_t.self)
            return LeaseRecord(
                token: UUID(uuid: token),
                process: Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: Int32.self)),
                expiry: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 32, as: UInt64.self)),
                syncingSince: count == size
                    ? UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 40, as: UInt64.self)) : 0)
        }
    }

    /// Writes the record at the file's start; whether all of it was written.
    func write(_ descriptor: Int32) -> Bool {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: Self.magic.littleEndian, as: UInt64.self)
            raw.storeBytes(of: token.uuid, toByteOffset: 8, as: uuid_t.self)
            raw.storeBytes(of: process.littleEndian, toByteOffset: 24, as: Int32.self)
            raw.storeBytes(of: expiry.littleEndian, toByteOffset: 32, as: UInt64.self)
            raw.storeBytes(of: syncingSince.littleEndian, toByteOffset: 40, as: UInt64.self)
        }
        return bytes.withUnsafeBytes { SystemCall.pwrite(descriptor, $0.baseAddress!, Self.size, at: 0) }
            == Self.size
    }
}
