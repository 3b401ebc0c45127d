#if os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// A throwaway Secret Service for the tests.
    ///
    /// A D-Bus session bus of its own (a config file
    /// with no service folders, so nothing is started on demand) and `gnome-keyring-daemon`
    /// on it with an unlocked login keyring, in a temporary home. Started once per test process;
    /// `DBUS_SESSION_BUS_ADDRESS` is set for this process (and so for its children) before
    /// anything here connects to a bus.
    final class SecretServiceDaemon: @unchecked Sendable {
        static let keyringPassword = "keyring-pw"
        let folder: URL
        let address: String
        private let bus: ChildProcess
        private var keyring: ChildProcess?

        /// The running daemon for a test, started again (and said why) when the last one ended
        /// by itself; `nil` (skipped, or recorded as a failure with `CI=true`) where `dbus-daemon`
        /// or `gnome-keyring-daemon` is missing.
        static var ready: SecretServiceDaemon? {
            guard let daemon = shared else { return nil }
            do {
                try daemon.restartIfEnded()
            } catch {
                Issue.record("the keyring daemon could not be started again: \(error)")
            }
            return daemon
        }

        private static let shared: SecretServiceDaemon? = {
            let programs = ["/usr/bin/dbus-daemon", "/usr/bin/dbus-send", "/usr/bin/gnome-keyring-daemon"]
            let missing = programs.filter { !FileManager.default.isExecutableFile(atPath: $0) }
            guard missing.isEmpty else {
                let message =
                    "\(missing.joined(separator: " and ")) missing: install dbus-daemon and gnome-keyring (and libsecret-1-0)"
                if ProcessInfo.processInfo.environment["CI"] == "true" {
                    Issue.record("the Secret Service tests cannot run, and CI=true: \(message)")
                } else {
                    print("SecretServiceTests: skipped: \(message)")
                }
                return nil
            }
            do {
                return try SecretServiceDaemon()
            } catch {
                Issue.record("could not start a Secret Service: \(error)")
                return nil
            }
        }()

        private init() throws {
            folder = ScratchFolder.make("secret-service")
            let home = folder.appendingPathComponent("home")
            let runtime = folder.appendingPathComponent("run")
            for made in [home, runtime] {
                try FileManager.default.createDirectory(
                    at: made, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            let socket = folder.appendingPathComponent("bus").path
            let config = folder.appendingPathComponent("bus.conf")
            try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
            bus = try Self.watched(["/usr/bin/dbus-daemon", "--config-file=\(config.path)", "--nofork"])
            address = "unix:path=\(socket)"
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: socket) {
                guard Date() < deadline else {
                    throw TestFailure("dbus-daemon did not listen: \(bus.currentStderr)")
                }
                usleep(20_000)
            }
            ChildProcess.setEnvironmentVariable("DBUS_SESSION_BUS_ADDRESS", address)
            try startKeyring()
        }

        /// The environment the keyring daemon runs in: the temporary home.
        private var keyringEnvironment: [String: String?] {
            [
                "HOME": folder.appendingPathComponent("home").path,
                "XDG_RUNTIME_DIR": folder.appendingPathComponent("run").path,
                "XDG_DATA_HOME": folder.appendingPathComponent("home/.local/share").path,
                "DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": nil,
            ]
        }

        /// Starts `gnome-keyring-daemon` (its login keyring unlocked with the password, created
        /// the first time) and waits until it owns the Secret Service's name on the bus.
        func startKeyring() throws {
            guard keyring == nil else { return }
            let started = try Self.watched(
                ["/usr/bin/gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                environment: keyringEnvironment, input: Self.keyringPassword)
            keyring = started
            let deadline = Date().addingTimeInterval(15)
            while !owned() {
                guard Date() < deadline else {
                    throw TestFailure(
                        "gnome-keyring-daemon did not take the Secret Service's name: \(started.currentStderr)"
                    )
                }
                usleep(50_000)
            }
        }

        /// Starts `command` under a shell that ends it when this process ends (however it ends:
        /// nothing tears down a test process's daemons otherwise) or when the shell is told to
        /// stop, and that the command does not outlive (`setpriv --pdeathsig`: the shell killed
        /// outright takes it along); `input` is the command's standard input.
        private static func watched(
            _ command: [String], environment: [String: String?] = [:], input: String = ""
        ) throws -> ChildProcess {
            let script = """
                printf '%s' "$PREFS_DAEMON_INPUT" | /usr/bin/setpriv --pdeathsig KILL "$@" &
                child=$!
                trap 'kill -9 $child 2>/dev/null; exit 0' TERM
                while kill -0 $PREFS_TEST_PROCESS 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.2; done
                kill -9 $child 2>/dev/null
                """
            var variables = environment
            variables["PREFS_DAEMON_INPUT"] = input
            variables["PREFS_TEST_PROCESS"] = String(getpid())
            return try ChildProcess.start(
                URL(fileURLWithPath: "/bin/sh"), ["-c", script, "sh"] + command, environment: variables)
        }

        /// Starts the keyring daemon again when it ended without being asked, printing how it
        /// ended (a test needs a running daemon, whatever ended the last one).
        func restartIfEnded() throws {
            guard let keyring, !keyring.isRunning || !owned() else { return }
            let output = keyring.stop(SIGTERM)
            print(
                "SecretServiceDaemon: the keyring daemon had ended (status \(output.status)): \(output.stderr.suffix(2_000))"
            )
            self.keyring = nil
            try startKeyring()
        }

        /// Ends the keyring daemon (the bus stays): the Secret Service goes away.
        func stopKeyring() {
            _ = keyring?.stop(SIGTERM)
            keyring = nil
            let deadline = Date().addingTimeInterval(10)
            while owned(), Date() < deadline { usleep(20_000) }
        }

        /// Stops (`SIGSTOP`) or continues (`SIGCONT`) the keyring daemon: a daemon that does not
        /// answer, its connection left open.
        func signalKeyring(_ signal: Int32) throws {
            guard let shell = keyring?.processIdentifier else {
                throw TestFailure("no keyring daemon")
            }
            let found = try ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/pgrep"), ["-P", String(shell), "-f", "gnome-keyring"])
            guard let daemon = Int32(found.stdout.split(separator: "\n").first ?? "") else {
                throw TestFailure(
                    "the keyring daemon's process was not found: \(found.stdout) \(found.stderr)")
            }
            kill(daemon, signal)
        }

        /// Locks the login keyring, as a screen lock or `secret-tool lock` does.
        func lockKeyring() throws {
            let output = try dbusSend([
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock",
                "array:objpath:/org/freedesktop/secrets/collection/login",
            ])
            guard output.contains("collection/login") else {
                throw TestFailure("the keyring did not lock: \(output)")
            }
        }

        /// Whether someone owns the Secret Service's name on the bus.
        private func owned() -> Bool {
            let output = try? dbusSend([
                "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets",
            ])
            return output?.contains("boolean true") == true
        }

        /// Calls a method on the bus with `dbus-send`, returning its printed reply and errors.
        private func dbusSend(_ arguments: [String]) throws -> String {
            let output = try ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/dbus-send"), ["--session", "--print-reply"] + arguments,
                environment: ["DBUS_SESSION_BUS_ADDRESS": address])
            return output.stdout + output.stderr
        }
    }
#endif
