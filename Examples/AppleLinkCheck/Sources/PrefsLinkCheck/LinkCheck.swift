import Foundation
import Prefs

extension Preferences.Keys {
    static let linkCheckVolume = Key<Double>("linkCheckVolume", default: 0.5)
}

/// Opens a SQLite store, writes, reads and flushes: the journal, its checksums, its lock and its
/// wake-ups are then all linked into the framework.
///
/// ```swift
/// let volume = try PrefsLinkCheck.roundTrip(in: FileManager.default.temporaryDirectory)
/// ```
public enum PrefsLinkCheck {
    /// Writes 0.8 to a store in `folder`, flushes it, and reads the value back.
    public static func roundTrip(in folder: URL) throws -> Double {
        let store = try SQLiteStore(path: folder.appendingPathComponent("link-check.sqlite").path)
        let prefs = Preferences(store: store)
        try prefs.set(0.8, for: .linkCheckVolume)
        try store.flush()
        return prefs[.linkCheckVolume]
    }
}
