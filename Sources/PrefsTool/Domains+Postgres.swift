import Prefs

#if PREFS_POSTGRESQL
    import PrefsPostgres

    /// The tool's PostgreSQL steps: a namespace is a domain.
    enum PostgresDomains {
        static func namespaces(url: String) throws -> [String] {
            try run { try PostgresStore.namespaces(url: url) }
        }

        static func store(url: String, namespace: String) throws -> any PreferenceStore {
            try run { try PostgresStore(url: url, namespace: namespace) }
        }

        /// Runs a PostgreSQL step, turning its failure (whose text never holds the password) into
        /// the tool's store error.
        static func run<Result>(_ body: () throws -> Result) throws -> Result {
            do {
                return try body()
            } catch let error as StoreError {
                throw CLIError.store("\(error)")
            }
        }
    }
#else
    /// This build of the tool has no PostgreSQL support (macOS without the `PostgreSQL` trait).
    enum PostgresDomains {
        static func namespaces(url: String) throws -> [String] { throw unavailable }

        static func store(url: String, namespace: String) throws -> any PreferenceStore { throw unavailable }

        static func run<Result>(_ body: () throws -> Result) throws -> Result { throw unavailable }

        private static var unavailable: CLIError {
            .usage(
                "this prefs was built without PostgreSQL support; build it with `swift build --traits PostgreSQL` (needs libpq, e.g. brew install libpq)"
            )
        }
    }
#endif
