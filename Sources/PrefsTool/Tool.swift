// The `prefs` tool as a library: the macOS `defaults` command for every Prefs store, on Linux too.
// The executable (PrefsCLI) only calls `runTool` and prints its error; the fuzzers call the same
// entry points.
//
//   prefs [--store STORE] [--json] [--format xml|json|binary] COMMAND …
//
// Argument parsing is by hand and table-driven: global options here, the verbs in Commands.swift.
import Foundation
import Prefs

/// A failure the tool reports: one line on stderr and an exit code, with nothing written.
package enum CLIError: Error {
    /// Unknown command or flag, missing argument: exit 64 (EX_USAGE), with a pointer to help.
    case usage(String)
    /// A value that does not parse, malformed plist text: exit 64, nothing written.
    case badInput(String)
    /// A missing domain or key: exit 1, as `defaults` does.
    case notFound(String)
    /// An import file that cannot be read: exit 66 (EX_NOINPUT).
    case cannotRead(String)
    /// An export file that cannot be written: exit 73 (EX_CANTCREAT).
    case cannotWrite(String)
    /// The store failed (corrupt, read-only, full): exit 74 (EX_IOERR).
    case store(String)
    /// An administrator locked the key: exit 1, nothing written.
    case locked(String)

    package var exitCode: Int32 {
        switch self {
        case .usage, .badInput: 64
        case .notFound, .locked: 1
        case .cannotRead: 66
        case .cannotWrite: 73
        case .store: 74
        }
    }
}

/// Output that reaches a pipe at once (watch) and never interleaves within a line.
package enum Output {
    package static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    package static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Blocks until SIGINT or SIGTERM, then returns (so `watch` ends cleanly with status 0).
    static func waitForInterrupt() {
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        for source in sources { source.cancel() }
    }
}

enum Usage {
    static let header = """
        usage: prefs [--store STORE [--namespace N]] [--json] [--force] [--show-secret] [--stdin] COMMAND …
          STORE: default (SQLite files under $XDG_CONFIG_HOME/prefs on Linux, UserDefaults on Apple platforms)
                 | userdefaults (Foundation's own domains) | sqlite:FOLDER | sqlite:FILE.sqlite
                 | postgres://… (one namespace per domain; --namespace N: only N)
                 (without --store: $PREFS_STORE when set, else default)
          --json: print JSON instead of plist text
          --force: write a value the key's published declaration refuses
          --stdin: write DOMAIN KEY takes its value from standard input, not the command line
                   (where ps shows it): the text as the key's declared type, else a string
        """

    static var full: String {
        header + "\n\ncommands:\n" + commands.map(describe).joined(separator: "\n")
    }

    static func describe(_ command: Command) -> String {
        let summary = command.summary.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return
            "  \(command.usage)\n      \(summary.joined(separator: "\n      "))\n      example: \(command.example)"
    }
}

/// Parses the global options, finds the command, checks its argument count, and runs it.
package func runTool(_ arguments: [String]) throws {
    // $PREFS_STORE stands in for a missing --store: a script (or a test) points every command at
    // one store without repeating it, and never touches the user's own preferences by mistake.
    let environment = ProcessInfo.processInfo.environment
    var storeName = environment["PREFS_STORE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
    var json = false
    var force = false
    var showSecrets = false
    var valueFromInput = false
    var namespace: String?
    var format = PlistText.FileFormat.xml
    var remaining = arguments[...]

    func formatValue(_ text: String?) throws -> PlistText.FileFormat {
        guard let text, let value = PlistText.FileFormat(rawValue: text) else {
            throw CLIError.usage("--format needs xml, json or binary")
        }
        return value
    }

    while let option = remaining.first, option.hasPrefix("--") {
        remaining.removeFirst()
        let (name, inlineValue) = option.split(separator: "=", maxSplits: 1).map(String.init).pair
        switch name {
        case "--store":
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw CLIError.usage("--store needs a value")
            }
            storeName = value
        case "--namespace":
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw CLIError.usage("--namespace needs a value")
            }
            namespace = value
        case "--json": json = true
        case "--force": force = true
        case "--show-secret": showSecrets = true
        case "--stdin": valueFromInput = true
        case "--format": format = try formatValue(inlineValue ?? remaining.popFirst())
        case "--help":
            Output.line(Usage.full)
            return
        default: throw CLIError.usage("unknown option '\(option)'")
        }
    }
    guard let name = remaining.popFirst() else { throw CLIError.usage("a command is missing") }
    if name == "-h" {
        Output.line(Usage.full)
        return
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        throw CLIError.usage("unknown command '\(name)'")
    }
    var commandArguments = Array(remaining)
    // `export` also takes `--format` after its arguments.
    if command.name == "export", let index = commandArguments.firstIndex(where: { $0.hasPrefix("--format") })
    {
        let option = commandArguments.remove(at: index)
        if option == "--format" {
            guard index < commandArguments.count else {
                throw CLIError.usage("--format needs xml, json or binary")
            }
            format = try formatValue(commandArguments.remove(at: index))
        } else {
            format = try formatValue(String(option.dropFirst("--format=".count)))
        }
    }
    // An option of the tool's own after the command would be taken for a domain, a key or a
    // value (`prefs write --stdin D K` wrote a domain named "--stdin"): refused, saying where
    // it goes.
    if let misplaced = commandArguments.first(where: globalOptions.contains) {
        throw CLIError.usage(
            "\(misplaced) is an option of prefs itself: it goes before the command (prefs \(misplaced) \(command.name) …)"
        )
    }
    guard command.arguments.contains(commandArguments.count) else {
        throw CLIError.usage("\(command.name): wrong number of arguments\nusage: prefs \(command.usage)")
    }
    var store = try StoreChoice.parse(storeName)
    if let namespace {
        guard case .postgres(let url, _) = store else {
            throw CLIError.usage("--namespace is for a postgres://… store")
        }
        store = .postgres(url: url, namespace: namespace)
    }
    var invocation = Invocation(store: store, json: json, format: format, arguments: commandArguments)
    invocation.force = force
    invocation.showSecrets = showSecrets
    if valueFromInput {
        guard command.name == "write", commandArguments.count == 2 else {
            throw CLIError.usage("--stdin is for write DOMAIN KEY: the value is read from standard input")
        }
        invocation.input = try readValueFromInput()
    }
    try command.run(invocation)
}

/// What `--stdin` reads: standard input to its end, as UTF-8 text.
///
/// One final line break is dropped (`echo` adds one). Empty input is refused: a command that
/// failed before the pipe must not write an empty value.
private func readValueFromInput() throws -> String {
    let data = FileHandle.standardInput.readDataToEndOfFile()
    guard var text = String(data: data, encoding: .utf8) else {
        throw CLIError.badInput("--stdin: standard input is not UTF-8 text; nothing was written")
    }
    if text.hasSuffix("\r\n") {
        text.removeLast()  // "\r\n" is one Character
    } else if text.hasSuffix("\n") {
        text.removeLast()
    }
    guard !text.isEmpty else {
        throw CLIError.badInput("--stdin: standard input was empty; nothing was written")
    }
    return text
}

/// The tool's own options, which go before the command.
private let globalOptions: Set<String> = [
    "--store", "--namespace", "--json", "--force", "--show-secret", "--stdin", "--help",
]

extension Array where Element == String {
    fileprivate var pair: (String, String?) { (self[0], count > 1 ? self[1] : nil) }
}

/// Runs the tool as the `prefs` command does: an error is one line on stderr and an exit code.
///
/// Returns the exit status (0 on success).
package func runToolReportingErrors(_ arguments: [String]) -> Int32 {
    do {
        try runTool(arguments)
        return 0
    } catch let error as CLIError {
        switch error {
        case .usage(let message):
            Output.error("prefs: \(message)\nRun 'prefs --help' for usage.")
        case .badInput(let message), .cannotRead(let message), .cannotWrite(let message), .store(let message),
            .locked(let message):
            Output.error("prefs: \(message)")
        case .notFound(let message):
            Output.error(message)
        }
        return error.exitCode
    } catch {
        Output.error("prefs: \(error)")
        return 70
    }
}
