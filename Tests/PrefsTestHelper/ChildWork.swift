import Foundation
import Prefs

/// What the processes the tests start do, where several of the helper's modes share it.
///
/// ```swift
/// try ChildWork.acknowledgedWrites(to: prefs, count: 1_000) { index in print(index) }
/// ```
enum ChildWork {
    /// Writes `k<i>` = `i` (a string of `i` and `fill` x's when `fill` > 0), then `latest` = `i`,
    /// for `i` from one past the stored `latest`, and calls `acknowledge(i)` once both writes
    /// returned: whatever `acknowledge` records was acknowledged, and must survive.
    ///
    /// `retrying`: a write that throws is said on stderr and tried again 20 ms later (a server
    /// that went away); otherwise the error is thrown.
    static func acknowledgedWrites(
        to prefs: Preferences, fill: Int = 0, pauseMicroseconds: UInt32 = 0, count: Int = .max,
        retrying: Bool = false, acknowledge: (Int) -> Void
    ) throws {
        let padding = String(repeating: "x", count: fill)
        let latest = Preferences.Key<Int>("latest", default: -1)
        var index = prefs[latest] + 1
        var written = 0
        while written < count {
            do {
                try prefs.store.setValue(
                    padding.isEmpty ? .integer(Int64(index)) : .string("\(index)\(padding)"),
                    forKey: "k\(index)")
                try prefs.set(index, for: latest)
            } catch  where retrying {
                FileHandle.standardError.write(Data("retrying k\(index): \(error)\n".utf8))
                usleep(20_000)
                continue
            }
            acknowledge(index)
            index += 1
            written += 1
            if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        }
    }

    /// Runs `update { $0[key] += 1 }` `count` times: several processes doing it at once must end
    /// at the sum of their counts.
    static func increments(of keyName: String, in prefs: Preferences, count: Int) throws {
        let key = Preferences.Key<Int>(keyName, default: 0)
        for _ in 0..<count { try prefs.update { $0[key] += 1 } }
    }

    /// Writes a line to standard output at once, unbuffered, so the parent sees exactly what was
    /// acknowledged even if this process is killed a moment later.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
