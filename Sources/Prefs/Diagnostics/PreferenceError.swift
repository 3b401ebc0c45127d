import Foundation

/// An error from a preference operation, with the key and store it concerns.
///
/// ```swift
/// do {
///     try prefs.set(UInt64.max, for: .counter)
/// } catch let error as PreferenceError {
///     print(error)  // cannot store "counter" in MemoryStore: UInt64 cannot be stored: …
/// }
/// ```
public struct PreferenceError: Error, CustomStringConvertible, LocalizedError {
    /// What went wrong.
    public enum Reason: Sendable {
        /// The value could not be turned into its stored form; nothing was written.
        case encoding(ValueCodingError)
        /// The store could not write (full disk, read-only file, lost server); nothing was changed.
        case store(any Error)
        /// An administrator locked the key (``SystemLayer``): the file, or `managed preferences`.
        case locked(by: String)
    }

    /// The key that was being written.
    public let key: String
    /// A description of the store, such as `MemoryStore` or `UserDefaults(suite: group.example)`.
    public let store: String
    /// What went wrong.
    public let reason: Reason

    /// Creates an error; stores use it to report their failures with context.
    ///
    /// ```swift
    /// throw PreferenceError(key: "volume", store: "MyStore", reason: .store(POSIXError(.ENOSPC)))
    /// ```
    public init(key: String, store: String, reason: Reason) {
        self.key = key
        self.store = store
        self.reason = reason
    }

    /// A one-line explanation naming the key, the store and the cause.
    ///
    /// ```swift
    /// let error = PreferenceError(key: "volume", store: "MemoryStore", reason: .store(POSIXError(.ENOSPC)))
    /// print(error.description)  // writing "volume" to MemoryStore failed: …
    /// ```
    public var description: String {
        switch reason {
        case .encoding(let cause): "cannot store \"\(key)\" in \(store): \(cause)"
        case .store(let cause): "writing \"\(key)\" to \(store) failed: \(cause)"
        case .locked(let source):
            "cannot store \"\(key)\" in \(store): an administrator locked it (\(source))"
        }
    }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
