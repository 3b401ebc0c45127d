import Foundation

#if os(macOS) || os(Linux)
    /// The folder the package's executables were built into: `PREFS_TEST_PRODUCTS` when set, else
    /// the folder of the binary these tests run in (or one above it, out of `*.xctest/Contents/MacOS`),
    /// else the package's own `.build/debug`, found from this file's path.
    ///
    /// The running binary is asked for itself (`/proc/self/exe` on Linux; on macOS the image holding
    /// this code, from `dladdr`): on macOS the tests run inside a helper of the toolchain (`xctest`,
    /// `swiftpm-testing-helper`), so `argv[0]` points there, and `Bundle.allBundles` need not list
    /// the test bundle.
    ///
    /// ```swift
    /// let helper = Products.executable("PrefsTestHelper")
    /// ```
    public enum Products {
        /// Every folder looked in, in order.
        public static let searched: [URL] = {
            if let given = ProcessInfo.processInfo.environment["PREFS_TEST_PRODUCTS"] {
                return [URL(fileURLWithPath: given)]
            }
            var binaries: [URL] = []
            #if os(Linux)
                if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                    binaries.append(URL(fileURLWithPath: exe))
                }
            #else
                // The test bundle's own image (Glibc does not export `dladdr` to Swift).
                var image = Dl_info()
                if dladdr(#dsohandle, &image) != 0, let name = image.dli_fname {
                    binaries.append(URL(fileURLWithPath: String(cString: name)))
                }
            #endif
            if let main = Bundle.main.executableURL { binaries.append(main) }
            var folders: [URL] = []
            for binary in binaries {
                // `…/debug/X.xctest` (Linux), `…/debug/X.xctest/Contents/MacOS/X` (macOS).
                var folder = binary.resolvingSymlinksInPath()
                for _ in 0..<4 {
                    folder.deleteLastPathComponent()
                    folders.append(folder)
                }
            }
            // Tests/PrefsTestSupport/ChildProcess.swift → the package → `.build/debug`.
            let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent()
            folders.append(package.appendingPathComponent(".build/debug").resolvingSymlinksInPath())
            return folders
        }()

        /// The products folder (`.build/debug` or `.build/<triple>/debug`): the first searched that
        /// holds `PrefsTestHelper`.
        public static let folder: URL =
            searched.first { has("PrefsTestHelper", in: $0) } ?? searched.first ?? URL(fileURLWithPath: ".")

        /// An executable of this package (`prefs`, `PrefsTestHelper` …); ``ChildProcess/start(_:_:environment:input:)``
        /// says where it was looked for when it is in none of the folders.
        public static func executable(_ name: String) -> URL {
            (has(name, in: folder) ? folder : searched.first { has(name, in: $0) } ?? folder)
                .appendingPathComponent(name)
        }

        static func has(_ name: String, in folder: URL) -> Bool {
            FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent(name).path)
        }
    }

    /// The Swift toolchain that runs these tests.
    ///
    /// It is the folder of the `swift` on `PATH`, its links followed. Its tools are started by full
    /// path from there, so a program of the same name earlier on `PATH` (Debian's `clang`,
    /// GNUstep's `plutil`) is never taken for it.
    ///
    /// ```swift
    /// let clang = try Toolchain.tool("clang")
    /// ```
    public enum Toolchain {
        /// The toolchain's `bin` folder, or `nil` when no `swift` is on `PATH`.
        public static let folder: URL? = {
            for entry in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
                let swift = URL(fileURLWithPath: String(entry)).appendingPathComponent("swift")
                if FileManager.default.isExecutableFile(atPath: swift.path) {
                    return swift.resolvingSymlinksInPath().deletingLastPathComponent()
                }
            }
            return nil
        }()

        /// The toolchain's `name`, printed once on standard error so that a log says which was used.
        public static func tool(_ name: String) throws -> URL {
            guard let folder else {
                throw TestFailure("no swift on PATH, so no toolchain to find \(name) in")
            }
            let tool = folder.appendingPathComponent(name)
            guard FileManager.default.isExecutableFile(atPath: tool.path) else {
                throw TestFailure("\(name) is not in the Swift toolchain at \(folder.path)")
            }
            FileHandle.standardError.write(Data("using \(tool.path)\n".utf8))
            return tool
        }
    }

    /// What a finished child process printed, and how it ended.
    public struct ChildOutput: Sendable {
        /// The exit status (or the signal's number when it was killed).
        public var status: Int32
        /// Standard output, without leading and trailing line breaks.
        public var stdout: String
        /// Standard error, without leading and trailing line breaks.
        public var stderr: String
        /// Standard output's bytes, untouched.
        public var stdoutData: Data
        /// Whether the test support killed the child at the bound of ``ChildProcess/finish(within:)``.
        public var killedAtBound = false
    }

    /// A started child process whose standard output and error are read as it runs, each on its own
    /// thread, so a child that writes a lot to either pipe never blocks on it.
    ///
    /// ```swift
    /// let child = try ChildProcess.start(Products.executable("PrefsTestHelper"), ["sqlite-write", path, "p", "10"])
    /// let output = child.finish()
    /// ```
    public final class ChildProcess: @unchecked Sendable {
        /// The child's process id, to read what it holds (`/proc/<id>/…`) or compare; signal it
        /// with ``signal(_:)``, which never reaches another process that took the id over.
        public let processIdentifier: pid_t
        private let reading = DispatchGroup()
        private let lock = NSLock()
        private var stdoutData = Data()
        private var stderrData = Data()
        /// Held while the child is collected or signalled, so that no signal goes to its id once
        /// it is collected (the id may then be another's: this machine's ids wrap at 32,768).
        private let reaping = NSLock()
        /// How the child ended, once collected (``Spawn/endStatus(_:)``).
        private var ended: Int32?

        private init(processIdentifier: pid_t) {
            self.processIdentifier = processIdentifier
        }

        /// A child nobody waits for any more is collected when it ends, by a thread of its own:
        /// uncollected, each would hold a process id until the test process ends.
        deinit {
            guard reaping.withLock({ ended == nil }) else { return }
            let pid = processIdentifier
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            }
        }

        /// Held while a child is started: the pipes made for one child must not leak into
        /// another started at the same moment from another test's thread (a leaked write end held
        /// by a long-lived child kept a reader waiting for the end of a pipe that never came).
        private static let spawning = NSLock()

        /// Sets a variable of this process's environment while no child is being started (a start
        /// copies the environment, and `setenv` may move it meanwhile).
        public static func setEnvironmentVariable(_ name: String, _ value: String) {
            spawning.withLock { _ = setenv(name, value, 1) }
        }

        /// Starts `executable` with `arguments` and this process's environment changed by
        /// `environment` (a `nil` value removes a variable); `input`, when given, is written to its
        /// standard input, which is then closed.
        public static func start(
            _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: Data? = nil
        ) throws -> ChildProcess {
            guard FileManager.default.isExecutableFile(atPath: executable.path) else {
                throw TestFailure(
                    "no executable at \(executable.path); the package's were looked for in "
                        + Products.searched.map(\.path).joined(separator: ", ")
                        + " (build them with `swift build --build-tests`, or set PREFS_TEST_PRODUCTS)")
            }
            let (stdin, out, err) = (Pipe(), Pipe(), Pipe())
            let child = try spawning.withLock {
                // Read under the lock, where no one sets a variable (setEnvironmentVariable).
                var variables = ProcessInfo.processInfo.environment
                for (name, value) in environment { variables[name] = value }
                // Close-on-exec on every end, once set: a child started by `system()` or by code that
                // does not take this lock inherits none of them (the spawn closes them in its own
                // child, and gives it the three it needs on 0, 1 and 2).
                for pipe in [stdin, out, err] {
                    for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting] {
                        _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
                    }
                }
                return ChildProcess(
                    processIdentifier: try Spawn.start(
                        executable.path, arguments, environment: variables,
                        stdin: stdin.fileHandleForReading.fileDescriptor,
                        stdout: out.fileHandleForWriting.fileDescriptor,
                        stderr: err.fileHandleForWriting.fileDescriptor))
            }
            // The child's ends are the child's alone: an end left open here would keep a reader
            // from ever seeing the end of the child's output.
            for handle in [stdin.fileHandleForReading, out.fileHandleForWriting, err.fileHandleForWriting] {
                try? handle.close()
            }
            child.collect(out, isStandardOutput: true)
            child.collect(err, isStandardOutput: false)
            if let input { stdin.fileHandleForWriting.write(input) }
            try? stdin.fileHandleForWriting.close()
            return child
        }

        /// Runs `executable` to its end.
        public static func run(
            _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: Data? = nil
        ) throws -> ChildOutput {
            try start(executable, arguments, environment: environment, input: input).finish()
        }

        /// Reads a pipe to its end on a thread of its own, keeping what arrives as it arrives.
        private func collect(_ pipe: Pipe, isStandardOutput: Bool) {
            reading.enter()
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [self] in
                // read(2) itself, again on EINTR: FileHandle.availableData stops the whole test
                // process with a fatal error when a signal interrupts it (a child stopped or
                // continued sends this process SIGCHLD, which any thread may take).
                let descriptor = handle.fileDescriptor
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    let chunk = Data(buffer[0..<count])
                    lock.withLock {
                        if isStandardOutput { stdoutData.append(chunk) } else { stderrData.append(chunk) }
                    }
                }
                reading.leave()
            }
        }

        /// Standard output so far, while the process runs.
        public var currentStdout: String { lock.withLock { String(decoding: stdoutData, as: UTF8.self) } }
        /// Standard error so far, while the process runs.
        public var currentStderr: String { lock.withLock { String(decoding: stderrData, as: UTF8.self) } }

        /// Waits for the process to end (or for a kill to take effect) and returns its output.
        ///
        /// Bounded, so that a child that never ends fails its test instead of hanging the run: after
        /// `seconds` the child is killed (`SIGKILL`), and its output says so on standard error. Once
        /// the child has ended, its pipes get a few seconds more to reach their end (another process
        /// holding one open, such as a grandchild, cannot hold this up).
        public func finish(within seconds: Double = 300) -> ChildOutput {
            var note = ""
            var status = waitForEnd(within: seconds)
            let killedAtBound = status == nil
            if killedAtBound {
                signal(SIGKILL)
                note = "\n[the test support killed this child: still running after \(Int(seconds)) s]"
                status = waitForEnd(within: 30)
            }
            if reading.wait(timeout: .now() + 5) == .timedOut {
                note += "\n[its output pipes were still open 5 s after it ended: output may be cut]"
            }
            let (out, err) = lock.withLock { (stdoutData, stderrData + Data(note.utf8)) }
            return ChildOutput(
                status: status ?? SIGKILL,
                stdout: String(decoding: out, as: UTF8.self).trimmingCharacters(in: .newlines),
                stderr: String(decoding: err, as: UTF8.self).trimmingCharacters(in: .newlines),
                stdoutData: out, killedAtBound: killedAtBound)
        }

        /// Sends `signal` (`SIGTERM` unless given) and waits for the child to end, as ``finish(within:)``
        /// does; a child that has not ended after `seconds` is killed.
        ///
        /// ```swift
        /// let ended = watcher.stop()
        /// #expect(ended.status == 0)
        /// ```
        public func stop(_ signal: Int32 = SIGTERM, within seconds: Double = 10) -> ChildOutput {
            self.signal(signal)
            return finish(within: seconds)
        }

        /// Kills the child if it still runs (for a `defer`), without waiting for it to end.
        public func killIfRunning() {
            signal(SIGKILL)
        }

        /// Sends `signal` to the child unless it has ended (`SIGSTOP` and `SIGCONT` included).
        ///
        /// Never `kill` a child's id by hand: once collected, the id may be another process's,
        /// such as a test's keyring daemon. The child is collected only here, under the same lock.
        public func signal(_ signal: Int32) {
            reaping.withLock {
                if reap() == nil { kill(processIdentifier, signal) }
            }
        }

        /// Whether the child has not ended yet.
        public var isRunning: Bool { reaping.withLock { reap() == nil } }

        /// The child's exit status (or the number of the signal that ended it) once it has ended,
        /// checked every 10 ms for at most `seconds`; `nil` while it still runs.
        private func waitForEnd(within seconds: Double) -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while true {
                if let status = reaping.withLock({ reap() }) { return status }
                if Date() > deadline { return nil }
                usleep(10_000)
            }
        }

        /// How the child ended, collecting it if it just has; `nil` while it runs.
        ///
        /// Called with `reaping` held.
        private func reap() -> Int32? {
            if let ended { return ended }
            var status: Int32 = 0
            var result: pid_t
            repeat {
                result = waitpid(processIdentifier, &status, WNOHANG)
            } while result == -1 && errno == EINTR
            if result == processIdentifier {
                ended = Spawn.endStatus(status)
            } else if result == -1 {
                // Not this process's child any more (collected by someone else): it has ended,
                // and how is unknown.
                ended = -1
            }
            return ended
        }
    }
#endif

/// Waits until `condition` holds, checking every 5 ms, for at most `seconds` of this task's own
/// running time.
///
/// ```swift
/// #expect(await eventually { store.value(forKey: "k") != nil })
/// ```
///
/// Swift Testing runs synchronous tests on the same few threads as asynchronous ones (two on a
/// two-core machine), so a long synchronous test can hold every thread for seconds; the task
/// that should make `condition` true is then starved as well. A pause counts for at most 50 ms,
/// so the time waited is time in which other tasks could run, not time everyone was stopped.
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    var remaining = seconds
    var last = Date()
    while remaining > 0 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
        let now = Date()
        remaining -= min(now.timeIntervalSince(last), 0.05)
        last = now
    }
    return condition()
}

/// A test's own failure, with its message.
///
/// ```swift
/// throw TestFailure("the value was lost")
/// ```
public struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// A failure saying `description`.
    public init(_ description: String) {
        self.description = description
    }
}
