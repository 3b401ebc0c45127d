import Foundation

/// A failure of a ``UserDefaultsStore``, naming the suite and the problem.
///
/// ```swift
/// do {
///     _ = try UserDefaultsStore(suiteName: "NSGlobalDomain")
/// } catch let error as UserDefaultsStoreError {
///     print(error)  // UserDefaults cannot open the suite "NSGlobalDomain" (…)
/// }
/// ```
public struct UserDefaultsStoreError: Error, Equatable, CustomStringConvertible, LocalizedError {
    /// The kind of problem.
    public enum Kind: Sendable, Equatable {
        /// Foundation refused to open the suite: a suite name may not be the app's own bundle
        /// identifier or `NSGlobalDomain` (use ``UserDefaultsStore/standard`` for the app's own
        /// domain).
        case suiteRefused
        /// A write to `key`, which Foundation takes for the stored key `storedKey` spelled
        /// differently (canonically equivalent Unicode, such as `"é"` as one scalar or as two)
        /// and would merge with it; nothing was written.
        case keyConflict(key: String, storedKey: String)
        /// Foundation could not write the domain to disk (`synchronize()` failed, giving no
        /// reason); the values of `keys` were put back as they were.
        case writeFailed(keys: [String])
    }

    /// The kind of problem.
    public let kind: Kind
    /// The suite (domain) concerned; `nil` for a store over a `UserDefaults` without a name.
    public let suite: String?

    /// Creates an error.
    ///
    /// ```swift
    /// UserDefaultsStoreError(kind: .suiteRefused, suite: "NSGlobalDomain")
    /// ```
    public init(kind: Kind, suite: String?) {
        self.kind = kind
        self.suite = suite
    }

    /// A one-line explanation.
    public var description: String {
        switch kind {
        case .suiteRefused:
            return
                "UserDefaults cannot open the suite \(String(reflecting: suite ?? "")) (a suite name may not be "
                + "the app's own bundle identifier or NSGlobalDomain; use UserDefaultsStore.standard for the "
                + "app's own domain)"
        case .keyConflict(let key, let storedKey):
            func scalars(_ text: String) -> String {
                text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                    .joined(separator: " ")
            }
            return "UserDefaults(suite: \(suite ?? "custom")): the key \(String(reflecting: key)) "
                + "(\(scalars(key))) and the stored key \(String(reflecting: storedKey)) (\(scalars(storedKey))) "
                + "are one key to Foundation, which would merge them; nothing was written (SQLiteStore keeps both)"
        case .writeFailed(let keys):
            return
                "Foundation could not write the domain \(suite ?? "(standard)") to disk (synchronize() failed); "
                + "\(keys.joined(separator: ", ")) kept their previous values"
        }
    }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }
}
