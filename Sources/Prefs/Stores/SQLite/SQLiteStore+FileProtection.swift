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
    /// ``none`` can be read: opening then throws ``SQLiteStoreError/Kind/protectedDataUnavailable``.
    public enum FileProtection: String, Sendable, CaseIterable {
        /// Readable once the user has unlocked the device after it started (MMKV's choice too).
        case completeUntilFirstUserAuthentication
        /// Readable only while the device is unlocked.
        case complete
        /// Files open before the device locked stay usable; new ones cannot be made while locked.
        case completeUnlessOpen
        /// No protection: readable even before the first unlock.
        case none
    }
}

extension SQLiteStore.FileProtection {
    /// Gives the file or folder at `path` this protection class (where data protection exists).
    ///
    /// The store's folder gets it too, so the files SQLite makes there (`-wal`, `-shm`) have it.
    func apply(to path: String) {
        #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
            let type: FileProtectionType =
                switch self {
                case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
                case .complete: .complete
                case .completeUnlessOpen: .completeUnlessOpen
                case .none: .none
                }
            try? FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
        #endif
    }

    /// Whether this platform protects files by class (so a refused open can mean "locked").
    static var platformProtectsFiles: Bool {
        #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
            true
        #else
            false
        #endif
    }

    /// What a failure to open a store's file with `errno` means: on a platform with data
    /// protection, `EPERM` is a protected file before the first unlock.
    static func kind(ofOpenFailure errno: Int32, platformProtectsFiles: Bool = platformProtectsFiles)
        -> SQLiteStoreError.Kind?
    {
        platformProtectsFiles && errno == EPERM ? .protectedDataUnavailable : nil
    }
}
