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
    /// The kind of problem: a fixed set of names, open to new ones, so a `switch` over them
    /// needs a `default` and a kind added in a later release breaks no code.
    ///
    /// ```swift
    /// do { try store.setValue(.bool(true), forKey: "e\u{301}") } catch let error as UserDefaultsStoreError
    /// where error.kind == .keyConflict { print(error.keys) }
    /// ```
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as its static property is spelled (`"keyConflict"`).
        public let rawValue: String

        /// The kind named `rawValue`.
        ///
        /// ```swift
        /// UserDefaultsStoreError.Kind(rawValue: "writeFailed") == .writeFailed  // true
        /// ```
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The kind's name.
        public var description: String { rawValue }

        /// Foundation refused to open the suite: a suite name may not be the app's own bundle
        /// identifier or `NSGlobalDomain` (use ``UserDefaultsStore/standard`` for the app's own
        /// domain).
        public static let suiteRefused = Kind(rawValue: "suiteRefused")
        /// A write to the first of ``UserDefaultsStoreError/keys``, which Foundation takes for
        /// the stored key second (spelled differently: canonically equivalent Unicode, such as
        /// `"é"` as one scalar or as two) and would merge with it; nothing was written.
        public static let keyConflict = Kind(rawValue: "keyConflict")
        /// Foundation could not write the domain to disk (`synchronize()` failed, giving no
        /// reason); the values of ``UserDefaultsStoreError/keys`` were put back as they were.
        public static let writeFailed = Kind(rawValue: "writeFailed")
    }

    /// The kind of problem.
    public let kind: Kind
    /// The suite (domain) concerned; `nil` for a store over a `UserDefaults` without a name.
    public let suite: String?
    /// The keys concerned (see each ``Kind``); empty when the problem is the whole suite's.
    public let keys: [String]
    /// What went wrong, in one line.
    public let message: String

    /// Creates an error.
    ///
    /// ```swift
    /// UserDefaultsStoreError(kind: .writeFailed, suite: "group.example", keys: ["volume"])
    /// ```
    public init(kind: Kind, suite: String?, keys: [String] = []) {
        self.kind = kind
        self.suite = suite
        self.keys = keys
        self.message = Self.message(kind, suite: suite, keys: keys)
    }

    /// A one-line explanation (the ``message``).
    public var description: String { message }

    /// The same explanation, for `localizedDescription`.
    public var errorDescription: String? { description }

    private static func message(_ kind: Kind, suite: String?, keys: [String]) -> String {
        switch kind {
        case .suiteRefused:
            return
                "UserDefaults cannot open the suite \(String(reflecting: suite ?? "")) (a suite name may not be "
                + "the app's own bundle identifier or NSGlobalDomain; use UserDefaultsStore.standard for the "
                + "app's own domain)"
        case .keyConflict where keys.count == 2:
            func scalars(_ text: String) -> String {
                text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                    .joined(separator: " ")
            }
            let (key, storedKey) = (keys[0], keys[1])
            return "UserDefaults(suite: \(suite ?? "custom")): the key \(String(reflecting: key)) "
                + "(\(scalars(key))) and the stored key \(String(reflecting: storedKey)) (\(scalars(storedKey))) "
                + "are one key to Foundation, which would merge them; nothing was written (SQLiteStore keeps both)"
        case .writeFailed:
            return
                "Foundation could not write the domain \(suite ?? "(standard)") to disk (synchronize() failed); "
                + "\(keys.joined(separator: ", ")) kept their previous values"
        default:
            return "UserDefaults(suite: \(suite ?? "custom")): \(kind) \(keys.joined(separator: ", "))"
        }
    }
}
