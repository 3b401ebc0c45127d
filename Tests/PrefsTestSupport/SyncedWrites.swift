import Foundation
import Prefs

/// The writes made to synced stores during a test, and the check that the replicas agree on
/// them afterwards: the proof of syncing, shared by the PostgreSQL fleet and the iCloud stand-in.
///
/// ```swift
/// var writes = SyncedWrites()
/// writes.tried("theme", "dark")
/// writes.acknowledged("theme", "dark", stamp)
/// let problems = writes.disagreements(among: replicas, keys: ["theme"])
/// ```
public struct SyncedWrites: Sendable {
    /// key → values tried (a write stopped before its acknowledgement may be kept or not).
    public private(set) var triedValues: [String: Set<String>] = [:]
    /// key → (value, stamp) of every acknowledged write.
    public private(set) var acknowledgedWrites: [String: [(value: String, stamp: SyncStamp)]] = [:]

    /// No writes yet.
    public init() {}

    /// A write about to be made.
    public mutating func tried(_ key: String, _ value: String) {
        triedValues[key, default: []].insert(value)
    }

    /// A write made: the store returned, having given it `stamp`.
    public mutating func acknowledged(_ key: String, _ value: String, _ stamp: SyncStamp) {
        tried(key, value)
        acknowledgedWrites[key, default: []].append((value, stamp))
    }

    /// Reads the lines a writer process printed: `try KEY VALUE` before each write, `ack KEY
    /// VALUE STAMP` after it, the stamp as it prints itself (`wall.counter@replica`).
    public mutating func read(_ output: String) {
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.count == 3, words[0] == "try" {
                tried(words[1], words[2])
            } else if words.count == 4, words[0] == "ack", let stamp = Self.stamp(words[3]) {
                acknowledged(words[1], words[2], stamp)
            }
        }
    }

    /// How many writes were acknowledged.
    public var acknowledgedCount: Int { acknowledgedWrites.values.reduce(0) { $0 + $1.count } }

    /// How many of `keys` were written by more than one replica (conflicts to decide).
    public func contested(_ keys: [String]) -> Int {
        keys.filter { Set((acknowledgedWrites[$0] ?? []).map(\.stamp.replica)).count > 1 }.count
    }

    /// What is wrong with the replicas after they synced, one line each (none: all is well).
    ///
    /// For every key: every replica holds the same stamp and value; the stamp is at least the
    /// highest acknowledged one (no acknowledged write was lost but to a higher stamp); at that
    /// stamp the value is that write's, above it a value that was tried (a write stopped before
    /// its acknowledgement).
    public func disagreements(among replicas: [SyncedStore], keys: [String]) -> [String] {
        var problems: [String] = []
        for key in keys {
            guard let highest = acknowledgedWrites[key]?.max(by: { $0.stamp < $1.stamp }) else { continue }
            let stamps = replicas.map { $0.stamp(forKey: key) }
            let values = replicas.map { $0.value(forKey: key) }
            guard Set(stamps).count == 1, values.allSatisfy({ $0 == values[0] }) else {
                problems.append(
                    "\(key): the replicas differ: \(zip(stamps, values).map { "\($0 as Any) \($1 as Any)" })")
                continue
            }
            guard let stamp = stamps[0], case .string(let value)? = values[0] else {
                problems.append("\(key): no value on the replicas")
                continue
            }
            if stamp < highest.stamp {
                problems.append("\(key): the acknowledged write \(highest.stamp) was lost to \(stamp)")
            } else if stamp == highest.stamp, value != highest.value {
                problems.append("\(key): \(value) at \(stamp), not the write of that stamp, \(highest.value)")
            } else if triedValues[key]?.contains(value) != true {
                problems.append("\(key): \(value) was never written")
            }
        }
        return problems
    }

    /// `wall.counter@replica`, as a stamp prints itself.
    static func stamp(_ text: String) -> SyncStamp? {
        guard let at = text.firstIndex(of: "@") else { return nil }
        let clock = text[..<at].split(separator: ".")
        guard clock.count == 2, let wall = UInt64(clock[0]), let counter = UInt32(clock[1]) else {
            return nil
        }
        return SyncStamp(
            wallMilliseconds: wall, counter: counter, replica: String(text[text.index(after: at)...]))
    }
}
