import Foundation

/// Strict reading, for programs that must not run on settings they cannot read: a daemon fails
/// fast at start rather than run on a default it took for a bad value (and later overwrite the
/// value the administrator or the user stored).
extension Preferences {
    /// The value in effect for `key`, throwing where a read would fall back to the default.
    ///
    /// The subscript never throws: a value of another type, or one the key does not accept,
    /// reads as the default and is reported to ``diagnostics``. This read throws a
    /// ``PreferenceError`` instead, naming the key, the value found and where it comes from (the
    /// store, an administrator's lock or system default), and reports nothing. Nothing stored
    /// gives the default.
    ///
    /// ```swift
    /// let port = try prefs.value(for: Preferences.Key<Int>("port", default: 8080))
    /// ```
    public func value<Value>(for key: Key<Value>) throws -> Value {
        if key.isSecret { return try strictSecretValue(of: key) }
        let (found, source) = inEffect(key.name)
        guard let found else { return key.defaultValue }
        do {
            return try key.decode(found)
        } catch {
            let cause =
                error as? PreferenceError
                ?? .typeMismatch(expected: swiftSpelling(of: Value.self), found: found)
            throw PreferenceError(cause.kind, "\(cause.message) (\(source))", underlying: cause.underlying)
                .naming(readOf: key.name, store: store.description)
        }
    }

    /// Checks every key's value in effect, throwing one error that names each that a read would
    /// not take and where it comes from.
    ///
    /// For a program to call at start with the keys it declares, before it uses any: the error
    /// (kind ``PreferenceError/Kind/invalidSettings``) says, for each bad key, what was expected
    /// and found and whether it was stored, locked or a system default. Missing values are fine:
    /// they give the key's default.
    ///
    /// ```swift
    /// try prefs.validate([Preferences.Keys.volume, Preferences.Keys.theme])
    /// ```
    public func validate(_ keys: [Keys]) throws {
        let problems = keys.compactMap { $0.readingProblem(in: self) }
        guard !problems.isEmpty else { return }
        let each = problems.map { "\"\($0.key ?? "")\": \($0.message)" }.joined(separator: "; ")
        throw PreferenceError(
            .invalidSettings,
            "\(problems.count) of \(keys.count) keys hold a value this program cannot read: \(each)"
        )
        // The keys are named in the message, each with its problem: the error names the store.
        .naming(readOf: nil, store: store.description)
    }

    /// Checks every key's value in effect (the variadic form of the array one).
    ///
    /// ```swift
    /// try prefs.validate(.volume, .theme)
    /// ```
    public func validate(_ keys: Keys...) throws {
        try validate(keys)
    }

    /// The stored form in effect for `name` and where it comes from: an administrator's lock,
    /// else the store, else the administrator's default; `nil` when there is none.
    private func inEffect(_ name: String) -> (PropertyListValue?, String) {
        let administrator = system.map { $0.path ?? "managed preferences" } ?? ""
        if let locked = system?.lockedValue(forKey: name) { return (locked, "locked by \(administrator)") }
        // The store is named by the error itself.
        if let stored = store.value(forKey: name) { return (stored, "stored") }
        if let fallback = system?.defaultValue(forKey: name) {
            return (fallback, "the system default from \(administrator)")
        }
        return (nil, "")
    }
}
