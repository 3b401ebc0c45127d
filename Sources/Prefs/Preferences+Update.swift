/// Atomic read-modify-write of any number of keys.
extension Preferences {
    /// The view of the preferences inside ``Preferences/update(_:)``: reads see the update's own
    /// writes, and every write is applied together when the closure returns.
    ///
    /// ```swift
    /// try prefs.update { p in
    ///     p[.launchCount] += 1
    ///     p[.lastLaunch] = .now
    /// }
    /// ```
    public struct Update {
        fileprivate var transaction: StoreTransaction
        let preferences: Preferences
        fileprivate var firstError: PreferenceError?

        /// The value for `key` as the update sees it; assigning stages a write (`nil` removes).
        ///
        /// ```swift
        /// p[.volume] = min(p[.volume] + 0.1, 1)
        /// ```
        public subscript<Value>(key: Key<Value>) -> Value {
            get {
                if key.isSecret { return preferences.secretValue(of: key) }
                guard let system = preferences.system else {
                    return preferences.decode(transaction[key.name], for: key)
                }
                return preferences.layered(key, system, stored: transaction[key.name])
            }
            set {
                do {
                    if key.isSecret { throw Preferences.secretInUpdate(key.name) }
                    try preferences.checkNotLocked(key)
                    transaction[key.name] = try preferences.encode(newValue, for: key)
                } catch let error as PreferenceError {
                    if firstError == nil { firstError = error }
                } catch {
                    fatalError("encode throws only PreferenceError")
                }
            }
        }

        /// Stages removing the stored values of one or several keys.
        ///
        /// ```swift
        /// p.reset(.volume)
        /// ```
        public mutating func reset(_ first: Keys, _ more: Keys...) {
            reset([first] + more)
        }

        /// The same for a list of keys (an empty list stages nothing).
        ///
        /// ```swift
        /// let keys: [Preferences.Keys] = [.volume, .username]
        /// p.reset(keys)
        /// ```
        public mutating func reset(_ keys: [Keys]) {
            for key in keys {
                guard !key.isSecret else {
                    if firstError == nil { firstError = Preferences.secretInUpdate(key.name) }
                    continue
                }
                transaction[key.name] = nil
            }
        }

        /// The stored form of the value under a raw key name, as the update sees it; assigning
        /// stages storing a stored-form value (`nil` removes it).
        ///
        /// ```swift
        /// if case .integer(let percent)? = p[raw: "volume_percent"] {
        ///     p[raw: "volume"] = .double(Double(percent) / 100)
        /// }
        /// ```
        public subscript(raw key: String) -> PropertyListValue? {
            get { transaction[key] }
            set { transaction[key] = newValue }
        }

        /// Whether a value is stored for `key`, as the update sees it.
        ///
        /// ```swift
        /// if !p.hasValue(for: .firstLaunch) { p[.firstLaunch] = .now }
        /// ```
        public func hasValue(for key: Keys) -> Bool {
            key.isSecret ? preferences.hasSecret(key.name) : transaction[key.name] != nil
        }
    }

    /// Runs `body` as one atomic read-modify-write.
    ///
    /// No other writer's change to the store lands between its reads and its writes, and
    /// observers see its result once. How far "other writer" reaches depends on the store:
    /// every process sharing a `SQLiteStore` file or a `PostgresStore` namespace, but only this
    /// process for a `UserDefaultsStore` (another process writing the same suite, an app
    /// extension or `defaults write`, can interleave) and a `MemoryStore`. If `body` throws, or a value it assigns cannot be encoded,
    /// nothing is applied and the error is thrown.
    ///
    /// ```swift
    /// try prefs.update { p in p[.launchCount] += 1 }
    /// ```
    ///
    /// The closure runs while the store is locked for writing. The rules:
    /// - Write through `p` only. A write to the same store any other way (a subscript, `set`,
    ///   `reset`, another `update`, a group property) would wait for this update to end, that is
    ///   forever: it stops the program with a message naming the misuse instead.
    /// - Reading through another handle is fine, but it does not see `p`'s writes until the
    ///   update returns.
    /// - Nesting updates of two different stores works; when two threads nest them in opposite
    ///   orders, the wait that would close the cycle throws at once (``StoreError`` of kind `.deadlock`).
    ///   Another thread's or process's transaction is waited for at most the store's lock
    ///   timeout (``StoreError`` of kind `.busy`).
    @discardableResult
    public func update<Result>(_ body: (inout Update) throws -> Result) throws -> Result {
        var written: [StoreKey: ValueChange] = [:]
        do {
            return try store.transaction { transaction in
                var update = Update(transaction: transaction, preferences: self)
                let result: Result
                do {
                    result = try body(&update)
                } catch {
                    throw ThrownByBody(error: error)
                }
                if let error = update.firstError { throw error }
                transaction = update.transaction
                written = transaction.writes
                return result
            }
        } catch let thrown as ThrownByBody {
            throw thrown.error
        } catch let error as PreferenceError where error.key == nil && error.kind == .nestedTooDeeply {
            // The store's own check of a value's nesting: the key is the write it refuses.
            let key = written.first { (try? $0.value.newValue?.checkNesting()) == nil }?.key.name
            throw error.naming(key: key ?? "(update)", store: store.description)
        } catch {
            throw failure(error, writing: [])
        }
    }
}

/// Tells the caller's own error apart from the store's, so it is rethrown unchanged.
private struct ThrownByBody: Error {
    let error: any Error
}
