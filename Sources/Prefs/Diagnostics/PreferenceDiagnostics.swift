import Foundation
import PrefsSupport

/// Something a read or a non-throwing write could not do, reported instead of crashing or throwing.
///
/// ```swift
/// let prefs = Preferences(store: MemoryStore(), diagnostics: PreferenceDiagnostics { issue in
///     logger.warning("\(issue)")
/// })
/// ```
public struct PreferenceIssue: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable {
        /// A stored value did not fit the key's type, so the read gave the default.
        case readFellBackToDefault(PreferenceError)
        /// A write that cannot throw (the subscript setter, `reset`, `removeAll`) failed; the
        /// stored value is as it was. The error is what `set` would have thrown: a
        /// ``PreferenceError`` for a value that cannot be stored, the store's own (a
        /// ``StoreError``) for a store that cannot write.
        case writeLost(any Error)
        /// A group migration found an old value that does not fit its property and left it in
        /// place: which key, what it holds, which property.
        case migrationLeftInPlace(String)
        /// Something a store did or found about its own files, which nothing else reports: a
        /// damaged journal cut and repaired, a file moved aside, values it cannot decode (`key`
        /// is empty); or a value read from a form other than its key's own — a `Codable` value
        /// that code before Prefs stored as JSON data or text — which the next write replaces
        /// (`key` is the key); or a key prefix whose stored names are probably not those meant
        /// (a group's joined to a word, a namespace's ending in a dot).
        case storeNotice(String)
    }

    /// The key concerned.
    public let key: String
    /// A description of the store.
    public let storeDescription: String
    /// What happened.
    public let kind: Kind
    /// For a read that fell back: the key's default is `nil` (an optional key, or the
    /// enum-case style's `value(as:)`), which the read gives instead.
    package var defaultIsNil = false

    /// An issue about `key` (empty for the store as a whole) in the store described by `store`.
    package init(key: String, store: String, kind: Kind) {
        self.key = key
        self.storeDescription = store
        self.kind = kind
    }

    /// One line: where and what.
    ///
    /// ```swift
    /// print(issue)  // prefs: "volume" in MemoryStore: expected Double, found string "loud"; using the default
    /// ```
    public var description: String {
        switch kind {
        case .readFellBackToDefault(let cause):
            "prefs: \"\(key)\" in \(storeDescription): \(cause); \(defaultIsNil ? "reading nil instead" : "using the default")"
        case .writeLost(let error as PreferenceError):
            "prefs: \(error); the stored value is unchanged"
        case .writeLost(let error):
            key.isEmpty
                ? "prefs: \(error); nothing was changed"
                : "prefs: writing \"\(key)\" to \(error); the stored value is unchanged"
        case .migrationLeftInPlace(let what):
            "prefs: migrating in \(storeDescription): \(what)"
        case .storeNotice(let message):
            "prefs: \(storeDescription): \(message)"
        }
    }
}

/// Where issues go: a handler the user chooses.
///
/// The default everywhere, ``shared``, is the program's one place: ``standardError`` (one line on
/// stderr, once per store, key and kind of issue) until the program sets it with ``bootstrap(_:)``.
///
/// ```swift
/// let diagnostics = PreferenceDiagnostics { issue in logger.warning("\(issue)") }
/// ```
public struct PreferenceDiagnostics: Sendable {
    private let handler: @Sendable (PreferenceIssue) -> Void

    /// Creates diagnostics that hand every issue to `handler`, from whichever thread found it.
    ///
    /// ```swift
    /// let diagnostics = PreferenceDiagnostics { issue in print(issue) }
    /// ```
    public init(_ handler: @escaping @Sendable (PreferenceIssue) -> Void) {
        self.handler = handler
    }

    /// Reports an issue.
    ///
    /// ```swift
    /// diagnostics.report(issue)
    /// ```
    public func report(_ issue: PreferenceIssue) {
        handler(issue)
    }

    /// Diagnostics that pass each store, key and kind of issue on to `handler` the first time
    /// only, so a value read in a loop does not flood the log; every lost write
    /// (``PreferenceIssue/Kind-swift.enum/writeLost(_:)``) passes, each being a value the program
    /// meant to keep.
    ///
    /// ```swift
    /// let diagnostics = PreferenceDiagnostics.oncePerKey { issue in logger.warning("\(issue)") }
    /// ```
    public static func oncePerKey(_ handler: @escaping @Sendable (PreferenceIssue) -> Void)
        -> PreferenceDiagnostics
    {
        let reported = Locked<Set<String>>([])
        return PreferenceDiagnostics { issue in
            if case .writeLost = issue.kind { return handler(issue) }
            let signature = "\(issue.storeDescription)\u{0}\(issue.key)\u{0}\(issue.kindName)"
            if reported.withLock({ $0.insert(signature).inserted }) { handler(issue) }
        }
    }

    /// One line on standard error per store, key and kind of issue, the first time it happens,
    /// and one for every lost write (``oncePerKey(_:)``).
    ///
    /// ```swift
    /// let prefs = Preferences(store: MemoryStore(), diagnostics: .standardError)
    /// ```
    public static let standardError = oncePerKey { issue in
        FileHandle.standardError.write(Data((issue.description + "\n").utf8))
    }

    /// The program's diagnostics, where every handle, store and remote reports by default.
    ///
    /// Each reports here unless it was given its own. Standard error (``standardError``) until the program chooses with
    /// ``bootstrap(_:)``.
    ///
    /// ```swift
    /// let prefs = Preferences(store: MemoryStore(), diagnostics: .shared)  // the default
    /// ```
    public static let shared = PreferenceDiagnostics { issue in chosen.withLock { $0 }.report(issue) }

    /// Chooses where the program's preferences report: every issue from now on, wherever no
    /// other diagnostics were given.
    ///
    /// The one place, as swift-log's `LoggingSystem.bootstrap`. Call it once, at start (a later call replaces it); handles,
    /// stores and remotes made before it report there too.
    ///
    /// ```swift
    /// PreferenceDiagnostics.bootstrap(.oncePerKey { issue in logger.warning("\(issue)") })
    /// ```
    public static func bootstrap(_ diagnostics: PreferenceDiagnostics) {
        chosen.withLock { $0 = diagnostics }
    }

    /// What ``shared`` hands issues to.
    private static let chosen = Locked(PreferenceDiagnostics.standardError)
}

extension PreferenceIssue {
    fileprivate var kindName: String {
        switch kind {
        case .readFellBackToDefault: "read"
        case .writeLost: "write"
        case .migrationLeftInPlace: "migration"
        // Each different notice once (a store has no key to tell them apart).
        case .storeNotice(let message): "notice:\(message)"
        }
    }
}
