#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import Prefs
    import PrefsTestSupport

    @testable import PrefsPostgres

    /// One store per host of a test's fleet, each reaching the server through its host's proxy,
    /// that measures how long a write made on one host takes to reach another: the fleet's
    /// promise ("a write acknowledged on a healthy host reaches every other healthy host within
    /// 1 s") as a user of two hosts would see it.
    ///
    /// ```swift
    /// let probes = try FleetProbes(urls: proxies.map(\.url), namespace: "fleet")
    /// let seconds = await probes.propagation(from: 0, to: 1)
    /// ```
    final class FleetProbes: Sendable {
        let stores: [SyncedStore]
        /// How long a write is waited for at most (a write that never arrives counts as this).
        static let patience = 5.0

        /// A store syncing by itself (listening for the others' pushes) per URL.
        init(urls: [String], namespace: String) throws {
            stores = try urls.map { url in
                try SyncedStore(
                    local: MemoryStore(), remote: try PostgresRemote(url: url, namespace: namespace),
                    syncing: .all, diagnostics: PreferenceDiagnostics { _ in }, automatically: true)
            }
        }

        /// Seconds from a write made on host `from` to its value read on host `to`
        /// (``patience`` when it did not arrive by then).
        func propagation(from: Int, to: Int) async -> Double {
            let key = "probe.from\(from)"
            let value = PropertyListValue.string(UUID().uuidString)
            let started = ContinuousClock.now
            do {
                try stores[from].setValue(value, forKey: key)
            } catch {
                return Self.patience
            }
            let deadline = started + .seconds(Self.patience)
            while ContinuousClock.now < deadline {
                if stores[to].value(forKey: key) == value {
                    return (ContinuousClock.now - started).timeInterval
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return Self.patience
        }

        /// A write each way between every two of `hosts`, `rounds` times: the seconds each took.
        func propagations(among hosts: [Int], rounds: Int) async -> [Double] {
            var seconds: [Double] = []
            for _ in 0..<rounds {
                for from in hosts {
                    for to in hosts where to != from {
                        seconds.append(await propagation(from: from, to: to))
                    }
                }
            }
            return seconds
        }

        /// The 99th percentile of `samples` (their highest, below 100 samples).
        static func p99(_ samples: [Double]) -> Double {
            guard !samples.isEmpty else { return 0 }
            let sorted = samples.sorted()
            let index = min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)
            return sorted[max(0, index)]
        }
    }
#endif
