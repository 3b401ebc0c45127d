import Foundation
import PrefsSupport

/// The keys of a `UserDefaults` being watched, each counted once per observation that asked for
/// it, so a key is watched from its first observer until its last one ends.
///
/// ```swift
/// var keys = WatchedKeys()
/// keys.add(["volume", "theme"])  // ["theme", "volume"]: start watching both
/// keys.add(["volume"])           // []: already watched
/// keys.remove(["volume"])        // []: one observer is left
/// ```
///
/// Shared by every platform (and so tested on Linux); only the key-value observing it drives is
/// Apple's.
package struct WatchedKeys: Sendable {
    private var counts: [String: Int] = [:]

    package init() {}

    /// Whether key-value observing can watch `key` as one key: it reads a dot as a step of a key
    /// path and `@` as the start of an operator (`@count`), and would watch something else.
    package static func isWatchable(_ key: String) -> Bool {
        !key.isEmpty && !key.contains(".") && !key.hasPrefix("@")
    }

    /// Counts one more observer of each key; returns the keys now watched for the first time.
    @discardableResult
    package mutating func add(_ keys: [String]) -> [String] {
        var started: [String] = []
        for key in Set(keys) where Self.isWatchable(key) {
            counts[key, default: 0] += 1
            if counts[key] == 1 { started.append(key) }
        }
        return started.sorted()
    }

    /// Counts one observer fewer of each key; returns the keys no one watches any more.
    @discardableResult
    package mutating func remove(_ keys: [String]) -> [String] {
        var stopped: [String] = []
        for key in Set(keys) {
            guard let count = counts[key] else { continue }
            if count == 1 {
                counts[key] = nil
                stopped.append(key)
            } else {
                counts[key] = count - 1
            }
        }
        return stopped.sorted()
    }

    /// Every key being watched.
    package var all: [String] { counts.keys.sorted() }
}

#if canImport(Darwin)
    /// Watches keys of one `UserDefaults` by key-value observing and calls `onChange` when one
    /// changes — written by this process or, unlike `UserDefaults.didChangeNotification`, by
    /// another (an app extension, a widget, `defaults write`).
    final class UserDefaultsKeyWatcher: NSObject, @unchecked Sendable {
        // `@unchecked`: `keys` is behind its lock, the rest never changes, and Apple documents
        // `UserDefaults` and key-value observing registration as thread-safe.
        private let defaults: UserDefaults
        private let onChange: @Sendable () -> Void
        private let keys = Locked(WatchedKeys())

        init(_ defaults: UserDefaults, onChange: @escaping @Sendable () -> Void) {
            self.defaults = defaults
            self.onChange = onChange
            super.init()
        }

        /// This object's address: the context its registrations carry, so it answers only its own.
        private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

        /// Starts watching the keys no one watched yet.
        func watch(_ names: [String]) {
            keys.withLock { keys in
                for key in keys.add(names) {
                    defaults.addObserver(self, forKeyPath: key, options: [], context: context)
                }
            }
        }

        /// Stops watching the keys no one watches any more.
        func unwatch(_ names: [String]) {
            keys.withLock { keys in
                for key in keys.remove(names) {
                    defaults.removeObserver(self, forKeyPath: key, context: context)
                }
            }
        }

        override func observeValue(
            forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
            context: UnsafeMutableRawPointer?
        ) {
            guard context == self.context else {
                super.observeValue(forKeyPath: keyPath, of: object, change: change, context: context)
                return
            }
            onChange()
        }

        /// Stops every observation, then keeps the watcher alive a little longer: key-value
        /// observing does not retain its observers, and a callback already running on another
        /// thread when the last observation is removed must not find the watcher freed.
        func retire() {
            keys.withLock { keys in
                let watched = keys.all
                for key in watched { defaults.removeObserver(self, forKeyPath: key, context: context) }
                keys.remove(watched)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { withExtendedLifetime(self) {} }
        }

        deinit {
            for key in keys.withLock({ $0.all }) {
                defaults.removeObserver(self, forKeyPath: key, context: context)
            }
        }
    }
#endif
