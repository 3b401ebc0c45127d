#if PREFS_POSTGRESQL
    import Prefs

    /// The kinds of failure only a ``PostgresStore`` meets (its errors are ``StoreError``s, whose
    /// messages never contain a password).
    ///
    /// ```swift
    /// do { try store.setValue(.integer(1), forKey: "k") } catch let error as StoreError
    /// where error.kind == .connectionLost { retryLater() }
    /// ```
    extension StoreError.Kind {
        /// The store could not connect when created (wrong password, unreachable server, a
        /// connection string libpq cannot read …).
        public static let connectionFailed = Self(name: "connectionFailed")
        /// The server went away; the write was not made (or not confirmed).
        ///
        /// The store reconnects.
        public static let connectionLost = Self(name: "connectionLost")
        /// The server refused a statement.
        public static let server = Self(name: "server")
        /// The namespace is empty, too long, or holds a line break or a NUL character.
        public static let invalidNamespace = Self(name: "invalidNamespace")
    }
#endif
