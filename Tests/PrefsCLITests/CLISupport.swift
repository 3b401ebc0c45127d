import Foundation

/// The built `prefs` binary run on an isolated HOME and XDG_CONFIG_HOME, one per test.
struct CLI {
    let home: URL

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutData = Data()
    }

    static func binary(_ name: String) -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<4 {
            folder.deleteLastPathComponent()
            let candidate = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return folder.appendingPathComponent(name)
    }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.appendingPathComponent("config").path
        return environment
    }

    func start(_ arguments: [String], program: String = "prefs", input: Pipe? = nil) throws -> (
        Process, Pipe, Pipe
    ) {
        let process = Process()
        process.executableURL = Self.binary(program)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        if let input { process.standardInput = input }
        try process.run()
        return (process, out, err)
    }

    /// Runs `prefs` (or the helper) to the end, feeding `input` on stdin.
    @discardableResult
    func run(_ arguments: String..., program: String = "prefs", input: Data? = nil) throws -> Result {
        try run(arguments, program: program, input: input)
    }

    @discardableResult
    func run(_ arguments: [String], program: String = "prefs", input: Data? = nil) throws -> Result {
        let inPipe = Pipe()
        let (process, out, err) = try start(arguments, program: program, input: inPipe)
        if let input { inPipe.fileHandleForWriting.write(input) }
        try inPipe.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .newlines),
            stderr: String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .newlines),
            stdoutData: stdout)
    }

    /// Everything in the store, as `prefs read` prints it: to check that nothing changed.
    func everything() throws -> String {
        let all = try run("--json", "read")
        return all.stdout + "|" + (try run("domains").stdout)
    }

    func remove() {
        try? FileManager.default.removeItem(at: home)
    }
}

/// Waits until `condition` holds, for at most `seconds`.
func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
