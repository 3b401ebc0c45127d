import Foundation

/// When and where a synced write was made: a hybrid logical clock's reading and the replica
/// that made it.
///
/// Stamps order every write of a synced key the same way on every replica, whatever order the
/// writes arrive in: by wall time, then by the counter the clock adds within one millisecond
/// (or while the wall clock stands behind a stamp already seen), then by replica. The highest
/// stamp wins.
///
/// ```swift
/// let earlier = SyncStamp(wallMilliseconds: 1_000, counter: 0, replica: "A")
/// let later = SyncStamp(wallMilliseconds: 1_000, counter: 1, replica: "B")
/// earlier < later  // true
/// ```
public struct SyncStamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970, as the writing replica's clock read them (or the highest it had
    /// seen, when its clock stood behind).
    public let wallMilliseconds: UInt64
    /// Which of the writes made at one wall time this is.
    public let counter: UInt32
    /// The replica that wrote: one per local store (a `SQLiteStore` file shared by several
    /// processes is one replica).
    public let replica: String

    /// A stamp of these parts.
    ///
    /// ```swift
    /// let stamp = SyncStamp(wallMilliseconds: 1_700_000_000_000, counter: 0, replica: "laptop")
    /// ```
    public init(wallMilliseconds: UInt64, counter: UInt32, replica: String) {
        self.wallMilliseconds = wallMilliseconds
        self.counter = counter
        self.replica = replica
    }

    /// Orders by wall time, then counter, then replica by its UTF-8 bytes (as a remote
    /// compares them: PostgreSQL's `COLLATE "C"`), never by a locale's or Unicode's order.
    public static func < (lhs: SyncStamp, rhs: SyncStamp) -> Bool {
        if (lhs.wallMilliseconds, lhs.counter) != (rhs.wallMilliseconds, rhs.counter) {
            return (lhs.wallMilliseconds, lhs.counter) < (rhs.wallMilliseconds, rhs.counter)
        }
        return lhs.replica.utf8.lexicographicallyPrecedes(rhs.replica.utf8)
    }

    /// `wall.counter@replica`, the wall time in milliseconds.
    public var description: String { "\(wallMilliseconds).\(counter)@\(replica)" }
}

extension SyncStamp {
    /// The stamp as it is kept beside a value: `["w": wall, "c": counter, "r": replica]`.
    package var propertyList: [String: PropertyListValue] {
        [
            "w": .integer(Int64(clamping: wallMilliseconds)), "c": .integer(Int64(counter)),
            "r": .string(replica),
        ]
    }

    /// The stamp kept in `propertyList`, or `nil` when it is not one.
    package init?(propertyList entries: [String: PropertyListValue]) {
        guard case .integer(let wall)? = entries["w"], wall >= 0,
            case .integer(let counter)? = entries["c"], let counter = UInt32(exactly: counter),
            case .string(let replica)? = entries["r"], !replica.isEmpty
        else { return nil }
        self.init(wallMilliseconds: UInt64(wall), counter: counter, replica: replica)
    }
}

/// A hybrid logical clock: each stamp it gives is above every stamp it gave or saw, and follows
/// the wall clock whenever the wall clock is ahead.
///
/// A replica whose wall clock runs behind another's still writes after what it has seen: its
/// stamps then count up from the highest seen. Its state is kept in the local store and
/// advanced inside the transaction of each write, so processes sharing a store never give one
/// stamp twice.
///
/// ```swift
/// var clock = HybridClock()
/// let first = clock.stamp(now: 1_000, replica: "A")   // 1000.0@A
/// let second = clock.stamp(now: 990, replica: "A")    // 1000.1@A: the clock went back
/// ```
package struct HybridClock: Equatable, Sendable {
    /// The highest wall time given or seen.
    package private(set) var wallMilliseconds: UInt64 = 0
    /// The counter at that wall time.
    package private(set) var counter: UInt32 = 0

    package init() {}

    /// A new stamp for a write now.
    package mutating func stamp(now: UInt64, replica: String) -> SyncStamp {
        if now > wallMilliseconds {
            (wallMilliseconds, counter) = (now, 0)
        } else if counter == .max {
            (wallMilliseconds, counter) = (wallMilliseconds + 1, 0)
        } else {
            counter += 1
        }
        return SyncStamp(wallMilliseconds: wallMilliseconds, counter: counter, replica: replica)
    }

    /// Takes in a stamp from elsewhere: the next stamp given is above it.
    package mutating func observe(_ stamp: SyncStamp) {
        if (stamp.wallMilliseconds, stamp.counter) > (wallMilliseconds, counter) {
            (wallMilliseconds, counter) = (stamp.wallMilliseconds, stamp.counter)
        }
    }

    /// The clock as it is kept in the local store.
    package var propertyList: PropertyListValue {
        .dictionary(["w": .integer(Int64(clamping: wallMilliseconds)), "c": .integer(Int64(counter))])
    }

    /// The clock kept in `value`; a fresh clock when there is none (or it is not one).
    package init(_ value: PropertyListValue?) {
        guard case .dictionary(let entries)? = value, case .integer(let wall)? = entries["w"], wall >= 0,
            case .integer(let counter)? = entries["c"], let counter = UInt32(exactly: counter)
        else { return }
        (wallMilliseconds, self.counter) = (UInt64(wall), counter)
    }
}
