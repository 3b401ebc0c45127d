#if PREFS_POSTGRESQL
    import Foundation
    /// A failure of a ``PostgresStore``; its message never contains a password.
    ///
    /// ```swift
    /// do { try store.setValue(.integer(1), forKey: "k") } catch let error as PostgresStoreError
    /// where error.kind == .connectionLost { retryLater() }
    /// ```
    public struct PostgresStoreError: Error, CustomStringConvertible, LocalizedError {
        /// The kind of failure: a fixed set of names, open to new ones, so a `switch` over them
        /// needs a `default` and a kind added in a later release breaks no code.
        ///
        /// ```swift
        /// PostgresStoreError.Kind(rawValue: "connectionLost") == .connectionLost  // true
        /// ```
        public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
            /// The kind's name, as its static property is spelled (`"connectionLost"`).
            public let rawValue: String

            /// The kind named `rawValue`.
            ///
            /// ```swift
            /// let kind = PostgresStoreError.Kind(rawValue: "server")
            /// ```
            public init(rawValue: String) { self.rawValue = rawValue }

            /// The kind's name.
            public var description: String { rawValue }

            /// The store could not connect when created (wrong password, unreachable server, a
            /// connection string libpq cannot read …).
            public static let connectionFailed = Kind(rawValue: "connectionFailed")
            /// The server went away; the write was not made (or not confirmed).
            ///
            /// The store reconnects.
            public static let connectionLost = Kind(rawValue: "connectionLost")
            /// The server refused a statement.
            public static let server = Kind(rawValue: "server")
            /// The namespace is empty, too long, or holds a line break or a NUL character.
            public static let invalidNamespace = Kind(rawValue: "invalidNamespace")
            /// A key holds a NUL character (PostgreSQL text cannot) or is too long for the index.
            public static let invalidKey = Kind(rawValue: "invalidKey")
            /// A value is larger than PostgreSQL takes.
            public static let tooLarge = Kind(rawValue: "tooLarge")
        }

        /// The kind of failure.
        public let kind: Kind
        /// The store, described without its password.
        public let store: String
        /// What libpq or the server said, without the password.
        public let message: String

        /// `STORE: MESSAGE`.
        public var description: String { "\(store): \(message)" }

        /// The same explanation, for `localizedDescription`.
        public var errorDescription: String? { description }
    }
#endif
