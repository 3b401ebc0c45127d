#if PREFS_POSTGRESQL
    import Foundation
    /// A failure of a ``PostgresStore``; its message never contains a password.
    ///
    /// ```swift
    /// catch let error as PostgresStoreError where error.kind == .connectionLost { retryLater() }
    /// ```
    public struct PostgresStoreError: Error, CustomStringConvertible, LocalizedError {
        /// The kind of failure.
        public enum Kind: Sendable, Equatable {
            /// The store could not connect when created (wrong password, unreachable server, a
            /// connection string libpq cannot read …).
            case connectionFailed
            /// The server went away; the write was not made (or not confirmed). The store reconnects.
            case connectionLost
            /// The server refused a statement.
            case server
            /// The namespace is empty, too long, or holds a line break or a NUL character.
            case invalidNamespace
            /// A key holds a NUL character (PostgreSQL text cannot) or is too long for the index.
            case invalidKey
            /// A value is larger than PostgreSQL takes.
            case tooLarge
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
