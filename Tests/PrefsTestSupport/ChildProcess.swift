import Foundation

#if os(macOS) || os(Linux)
    /// The folder the package's executables were built into, found the same way on every platform:
    /// beside the test bundle (macOS runs tests in a helper process, so `argv[0]` points into the
    /// toolchain there), else beside the test executable (Linux), else `PREFS_TEST_PRODUCTS`.
    ///
    /// ```swift
    /// let helper = Products.executable("PrefsTestHelper")
    /// ```
    public enum Products {
        /// The products folder (`.build/debug` or `.build/<triple>/debug`).
        public static let folder: URL = {
            if let given = ProcessInfo.processInfo.environment["PREFS_TEST_PRODUCTS"] {
                return URL(fileURLWithPath: given)
            }
            var candidates: [URL] = []
            // macOS: the `.xctest` bundle that holds the tests sits in the products folder.
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                candidates.append(bundle.bundleURL.deletingLastPathComponent())
            }
            // Linux: the test executable is itself `…/debug/PrefsPackageTests.xctest`.
            for start in [Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])] {
                guard var folder = start?.resolvingSymlinksInPath() else { continue }
                for _ in 0..<4 {
                    folder.deleteLastPathComponent()
                    candidates.append(folder)
                }
            }
            return candidates.first {
                FileManager.default.isExecutableFile(
                    atPath: $0.appendingPathComponent("PrefsTestHelper").path)
            }
                ?? candidates.first ?? URL(fileURLWithPath: ".")
        }()

        /// An executable of this package (`prefs`, `PrefsTestHelper` …).
        public static func executable(_ name: String) -> URL {
            folder.appendingPathComponent(name)
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
    }

    /// A started child process whose standard output and error are read as it runs, each on its own
    /// thread, so a child that writes a lot to either pipe never blocks on it.
    ///
    /// ```swift
    /// let child = try ChildProcess.start(Products.executable("PrefsTestHelper"), ["sqlite-write", path, "p", "10"])
    /// let output = child.finish()
    /// ```
    public final class ChildProcess: @unchecked Sendable {
        /// The process (to kill it, or read its identifier).
        public let process: Process
        private let stdin: Pipe
        private let reading = DispatchGroup()
        private let lock = NSLock()
        private var stdoutData = Data()
        private var stderrData = Data()

        private init(process: Process, stdin: Pipe) {
            self.process = process
            self.stdin = stdin
        }

        /// Starts `executable` with `arguments` and this process's environment changed by
        /// `environment` (a `nil` value removes a variable); `input`, when given, is written to its
        /// standard input, which is then closed.
        public static func start(
            _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: Data? = nil
        ) throws -> ChildProcess {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            var variables = ProcessInfo.processInfo.environment
            for (name, value) in environment { variables[name] = value }
            process.environment = variables
            let child = ChildProcess(process: process, stdin: Pipe())
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = child.stdin
            try process.run()
            child.collect(out, isStandardOutput: true)
            child.collect(err, isStandardOutput: false)
            if let input { child.stdin.fileHandleForWriting.write(input) }
            try? child.stdin.fileHandleForWriting.close()
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
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
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
        public func finish() -> ChildOutput {
            reading.wait()
            process.waitUntilExit()
            let (out, err) = lock.withLock { (stdoutData, stderrData) }
            return ChildOutput(
                status: process.terminationStatus,
                stdout: String(decoding: out, as: UTF8.self).trimmingCharacters(in: .newlines),
                stderr: String(decoding: err, as: UTF8.self).trimmingCharacters(in: .newlines),
                stdoutData: out)
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
