#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsTestSupport
    import Testing

    @testable import PrefsPostgres

    /// A throwaway PostgreSQL server for one test: `initdb` into a temporary folder, `pg_ctl start` listening on a Unix socket only, stopped and deleted afterwards.
    ///
    /// As root, it runs as the `postgres` user (the server refuses to run as root).
    final class PostgresServer {
        static let password = "s3cret-Pa55"

        let folder: URL
        let socketFolder: URL
        private let binaries: URL
        private let asPostgres: Bool

        /// The `bin` folder of the newest installed PostgreSQL, or `nil`.
        ///
        /// On Linux only where Debian's `postgresql` packages put it
        /// (`/usr/lib/postgresql/<version>/bin`), never a `pg_ctl` that comes first on `PATH` (a
        /// link to another version, a wrapper); on macOS, where no package path is fixed, the
        /// first on `PATH` (Homebrew's). Said once on standard output.
        static let binaries: URL? = {
            var found: URL?
            let root = URL(fileURLWithPath: "/usr/lib/postgresql")
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
            for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) where found == nil {
                let bin = root.appendingPathComponent(version).appendingPathComponent("bin")
                if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("pg_ctl").path) {
                    found = bin
                }
            }
            #if os(macOS)
                for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
                where found == nil {
                    let bin = URL(fileURLWithPath: String(folder))
                    if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("pg_ctl").path)
                    {
                        found = bin
                    }
                }
            #endif
            if let found { print("PrefsPostgresTests: using initdb and pg_ctl from \(found.path)") }
            return found
        }()

        /// Whether the tests can run here; with `CI=true` a missing server is a failure, not a skip.
        static var isAvailable: Bool {
            if binaries != nil { return true }
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record(
                    "PostgreSQL's server programs (initdb, pg_ctl) are missing, and CI=true: install postgresql"
                )
            } else {
                print(
                    "PrefsPostgresTests: skipped: PostgreSQL's server programs (initdb, pg_ctl) are not installed"
                )
            }
            return false
        }

        init() throws {
            guard let binaries = Self.binaries else {
                throw ServerError("PostgreSQL's server programs are not installed")
            }
            self.binaries = binaries
            asPostgres = getuid() == 0
            // Short paths: a Unix socket path must stay under ~100 bytes.
            folder = URL(fileURLWithPath: "/tmp/pg-\(UUID().uuidString.prefix(8))")
            socketFolder = folder.appendingPathComponent("s")
            try FileManager.default.createDirectory(at: socketFolder, withIntermediateDirectories: true)
            // A copy of one cluster made per test process: `initdb` takes a second or two of
            // processor time, a copy a tenth of that, and every test gets a server of its own.
            let template = try Self.template.get()
            try run(
                "/bin/cp", ["-a", template.appendingPathComponent("data").path, folder.path],
                asPostgres: false)
            if asPostgres {
                try run("/bin/chown", ["-R", "postgres:postgres", folder.path], asPostgres: false)
            }
            try start()
        }

        /// A cluster made once per test process with `initdb` (password authentication, no sync),
        /// never started: each server starts a copy of it.
        private static let template: Result<URL, Error> = Result {
            guard let binaries else { throw ServerError("PostgreSQL's server programs are not installed") }
            let folder = URL(fileURLWithPath: "/tmp/pg-template-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let passwordFile = folder.appendingPathComponent("pw")
            try Data(password.utf8).write(to: passwordFile)
            let asPostgres = getuid() == 0
            if asPostgres {
                try runProgram(
                    "/bin/chown", ["-R", "postgres:postgres", folder.path], in: folder, asPostgres: false)
            }
            try runProgram(
                binaries.appendingPathComponent("initdb").path,
                [
                    "-D", folder.appendingPathComponent("data").path, "-U", "postgres", "--pwfile",
                    passwordFile.path, "-A", "scram-sha-256", "--no-sync",
                ], in: folder, asPostgres: asPostgres)
            // Removed when the test process ends (it is never started, so only files remain).
            atexit { if case .success(let made) = template { try? FileManager.default.removeItem(at: made) } }
            return folder
        }

        /// `postgresql://postgres:PASSWORD@/postgres?host=SOCKET_FOLDER`.
        var url: String {
            "postgresql://postgres:\(Self.password)@/postgres?host=\(socketFolder.path)"
        }

        /// The client connections the server has, not counting the one asking, that meet
        /// `condition` (SQL on `pg_stat_activity`).
        func clientConnections(where condition: String = "true") throws -> Int {
            let connection = try PostgresConnection(url: url, redact: { $0 })
            let rows = try connection.run(
                """
                SELECT count(*)::bigint FROM pg_stat_activity
                WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND (\(condition))
                """)
            return Int(firstCell(rows).flatMap(int64) ?? -1)
        }

        func url(password: String) -> String {
            "postgresql://postgres:\(password)@/postgres?host=\(socketFolder.path)"
        }

        func start() throws {
            try run(
                binaries.appendingPathComponent("pg_ctl").path,
                [
                    "-D", folder.appendingPathComponent("data").path, "-w", "-l",
                    folder.appendingPathComponent("log").path,
                    "-o",
                    "-c listen_addresses='' -c unix_socket_directories='\(socketFolder.path)' -c fsync=off",
                    "start",
                ])
        }

        func stop(mode: String = "fast") throws {
            try run(
                binaries.appendingPathComponent("pg_ctl").path,
                ["-D", folder.appendingPathComponent("data").path, "-w", "-m", mode, "stop"])
        }

        func remove() {
            try? stop(mode: "immediate")
            try? FileManager.default.removeItem(at: folder)
        }

        /// Runs a server program to its end.
        ///
        /// Through `system()` and a shell that first closes every inherited descriptor above 2: the server that
        /// `pg_ctl start` leaves running must not hold this process's pipes open (Foundation's `Process` would
        /// then wait for it forever).
        private func run(_ program: String, _ arguments: [String], asPostgres: Bool? = nil) throws {
            try Self.runProgram(program, arguments, in: folder, asPostgres: asPostgres ?? self.asPostgres)
        }

        private static func runProgram(
            _ program: String, _ arguments: [String], in folder: URL, asPostgres: Bool
        )
            throws
        {
            let command = ([program] + arguments).map(Self.quote).joined(separator: " ")
            let user = asPostgres ? "/sbin/runuser -u postgres -- " : ""
            let outputFile = folder.appendingPathComponent("command-output").path
            let script = """
                for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done 2>/dev/null
                exec \(user)\(command) </dev/null >\(Self.quote(outputFile)) 2>&1
                """
            let status = system("/bin/bash -c \(Self.quote(script))")
            let text = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
            guard status == 0 else {
                throw ServerError(
                    "\((program as NSString).lastPathComponent) failed (status \(status)): \(text)")
            }
        }

        private static func quote(_ text: String) -> String {
            "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
    }

    struct ServerError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs the package's executables (the test helper unless another is named).
    enum Helper {
        static func start(_ arguments: [String], program: String = "PrefsTestHelper") throws -> ChildProcess {
            try ChildProcess.start(Products.executable(program), arguments)
        }

        static func run(_ arguments: [String], program: String = "PrefsTestHelper") throws -> ChildOutput {
            try start(arguments, program: program).finish()
        }
    }
#endif
