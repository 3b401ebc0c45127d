import Foundation

extension SQLiteStore {
    /// The data protection class of the store's files on iOS, iPadOS, watchOS, tvOS and visionOS
    /// (elsewhere there is none, and this changes nothing).
    ///
    /// ```swift
    /// var options = SQLiteStore.Options()
    /// options.fileProtection = .complete  // unreadable while the device is locked
    /// ```
    ///
    /// The default, ``completeUntilFirstUserAuthentication``, is what a store needs: its journal
    /// is mapped and read on every read, so with ``complete`` it becomes unreadable about 10
    /// seconds after the device locks, and a widget, a push or a background launch cannot use it
    /// until the user unlocks again. Before the first unlock after a restart no class but
    /// ``none`` can be read: opening then throws ``StoreError/Kind/protectedDataUnavailable``.
    public enum FileProtection: Sendable, CaseIterable {
        /// Readable once the user has unlocked the device after it started (MMKV's choice too).
        case completeUntilFirstUserAuthentication
        /// Readable only while the device is unlocked.
        case complete
        /// Files can be made while the device is locked, and one held open stays usable; one
        /// closed cannot be opened again until the unlock. A store's journal, held open, goes on
        /// taking writes and answering reads; its SQLite files, closed between calls, do not
        /// open, so moving the journal into SQLite waits for the unlock (said once to the
        /// diagnostics), and another process's writes it moved are seen after it.
        case completeUnlessOpen
        /// No protection: readable even before the first unlock.
        case none
    }
}

extension SQLiteStore.FileProtection {
    /// The files of the store at `path` that take its class.
    ///
    /// The database, SQLite's `-wal` and `-shm`, the journal, and a synced store's link lease;
    /// never their folder: an app may have given it a stricter class of its own, and lowering it
    /// would expose the app's files.
    static func storeFiles(at path: String) -> [String] {
        [path, path + "-wal", path + "-shm", path + "-prefs", path + ".sync-link"]
    }

    /// Gives each of the store's files that exists this protection class, where data protection
    /// exists, and only where the file has another one (so opening writes no metadata again).
    ///
    /// Called once the store is open, when SQLite has made its `-wal` and `-shm` (which start
    /// with the folder's class), and again after each connection opened later, which may have
    /// made them anew. Returns what could not be done, a line per file, for the diagnostics: a
    /// file left with another class is readable when it should not be, or not when it should.
    func apply(toStoreAt path: String) -> [String] {
        #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
            let type: FileProtectionType =
                switch self {
                case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
                case .complete: .complete
                case .completeUnlessOpen: .completeUnlessOpen
                case .none: .none
                }
            let files = FileManager.default
            var problems: [String] = []
            for file in Self.storeFiles(at: path) {
                guard let attributes = try? files.attributesOfItem(atPath: file) else { continue }
                if attributes[.protectionKey] as? FileProtectionType != type {
                    do {
                        try files.setAttributes([.protectionKey: type], ofItemAtPath: file)
                    } catch {
                        problems.append("could not give \(file) the data protection class \(self): \(error)")
                    }
                }
            }
            return problems
        #else
            return []
        #endif
    }

}
