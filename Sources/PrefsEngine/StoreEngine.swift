import PrefsModel

/// The SQLite store's engine as the store opens it: ``open(path:options:)`` makes a store's files
/// ready (the database and its schema, the journal beside it, every value loaded) and gives what
/// ``SQLiteStoreCore`` then reads, commits, checkpoints and observes.
///
/// <!-- swift: not compiled (package API: PrefsEngine is not a product) -->
/// ```swift
/// let settings = StoreEngine.Settings(busyTimeout: .seconds(10), report: { path, message in print(message) })
/// let opened = try StoreEngine.open(path: "/tmp/app.sqlite", options: settings)
/// let core = SQLiteStoreCore(path: "/tmp/app.sqlite", options: settings, opened: opened)
/// ```
package enum StoreEngine {
    /// The store's options in the engine's terms (the store maps its public `Options` to them).
    ///
    /// <!-- swift: not compiled (package API: PrefsEngine is not a product) -->
    /// ```swift
    /// var settings = StoreEngine.Settings(busyTimeout: .seconds(10), report: { _, _ in })
    /// settings.powerSafe = true
    /// ```
    package struct Settings: Sendable {
        /// Each write syncs the journal to the medium before it returns (`Durability.powerSafe`).
        package var powerSafe = false
        /// A damaged database is moved aside and an empty one made, instead of an error.
        package var recreateOnCorruption = false
        /// How long a write, a checkpoint or opening waits for another holder of the store.
        var busyTimeout: Duration
        /// Where notices go that nothing else reports: a journal repaired, a file moved aside,
        /// values this release cannot decode.
        var report: Journal.Reporter
        /// Gives the store's files at a path their protection class (data protection on Apple's
        /// mobile platforms; nothing elsewhere).
        package var protectFiles: @Sendable (_ path: String) -> Void = { _ in }
        /// Where tests stop or interrupt the engine.
        package var faults = SQLiteStoreFaults()

        /// Settings with the store's defaults but for the timeout and the reporter.
        package init(busyTimeout: Duration, report: @escaping Journal.Reporter) {
            self.busyTimeout = busyTimeout
            self.report = report
        }
    }

    /// A damaged database that opening moved aside before making an empty one.
    package struct Recovery: Sendable {
        /// Why the file could not be opened.
        package let error: StoreError
        /// Where it is now.
        package let movedTo: String
    }
}
