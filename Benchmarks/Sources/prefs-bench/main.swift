// prefs-bench: Prefs measured against the baselines a user would otherwise pick, in the same run.
//
//   swift run -c release --package-path Benchmarks prefs-bench [--quick] [--json] [--only TEXT] [--plot PATH] [--postgres URL [--fleet N]]
//
// Every figure is the median of several repetitions; ratios compare figures measured side by side.
// The workloads are the table in Suite.swift; Report.swift prints what they measured.
import Foundation
import Prefs

/// Runs every step of the suite (and the PostgreSQL ones when given a server), then prints the
/// report and writes the chart.
func runBenchmarks(_ options: BenchOptions) throws {
    var run = BenchRun(options: options)
    let cpuAtStart = MachineCPU.now()
    var metrics: [Metric] = []
    for step in Suite.steps(postgres: options.postgresURL != nil, fleet: options.fleet != nil)
    where options.only.map({ step.name.localizedCaseInsensitiveContains($0) }) ?? true {
        run.progress(step.name)
        metrics += try step.measure(&run)
    }
    if let start = cpuAtStart, let end = MachineCPU.now() {
        metrics.append(
            Metric(
                key: "machine_cpu_steal_percent",
                what:
                    "CPU time the hypervisor gave to others during the run (/proc/stat): above a few percent, figures are noisy",
                baseline: nil, value: end.stealPercent(since: start), unit: "%", goal: nil))
    }
    if options.json {
        print(Report.json(metrics))
    } else {
        print(Report.table(metrics, repetitions: run.sizes.repetitions, quick: options.quick))
    }
    if let plotPath = options.plotPath, let rawCommit = run.rawCommitNanoseconds {
        let svg = Plot.svg(points: run.plotPoints, rawCommit: rawCommit)
        try Data(svg.utf8).write(to: URL(fileURLWithPath: plotPath))
        if !options.json { print("\nchart written to \(plotPath)") }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
    do {
        try ChildMode.run(Array(arguments.dropFirst()))
    } catch {
        FileHandle.standardError.write(Data("prefs-bench child: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

var options = BenchOptions()
var remaining = arguments[...]
while let argument = remaining.popFirst() {
    switch argument {
    case "--quick": options.quick = true
    case "--json": options.json = true
    case "--only":
        guard let text = remaining.popFirst() else {
            FileHandle.standardError.write(Data("prefs-bench: --only needs part of a step's name\n".utf8))
            exit(64)
        }
        options.only = text
    case "--plot":
        guard let path = remaining.popFirst() else {
            FileHandle.standardError.write(Data("prefs-bench: --plot needs a path\n".utf8))
            exit(64)
        }
        options.plotPath = path
    case "--postgres":
        guard let url = remaining.popFirst() else {
            FileHandle.standardError.write(Data("prefs-bench: --postgres needs a URL\n".utf8))
            exit(64)
        }
        options.postgresURL = url
    case "--fleet":
        guard let count = remaining.popFirst().flatMap({ Int($0) }), count > 0 else {
            FileHandle.standardError.write(Data("prefs-bench: --fleet needs a number of processes\n".utf8))
            exit(64)
        }
        options.fleet = count
    case "--help", "-h":
        print(
            "usage: prefs-bench [--quick] [--json] [--only TEXT] [--plot PATH] [--postgres URL [--fleet N]]")
        exit(0)
    default:
        FileHandle.standardError.write(
            Data(
                "prefs-bench: unknown argument '\(argument)'\nusage: prefs-bench [--quick] [--json] [--only TEXT] [--plot PATH] [--postgres URL [--fleet N]]\n"
                    .utf8))
        exit(64)
    }
}

// Every UserDefaults suite here is named by an absolute path in the scratch folder, so Foundation
// keeps it there (Foundation on Linux reads XDG_CONFIG_HOME only at launch).
do {
    if options.fleet != nil && options.postgresURL == nil {
        throw BenchError("--fleet needs --postgres URL")
    }
    try runBenchmarks(options)
    Scratch.remove()
} catch {
    Scratch.remove()
    FileHandle.standardError.write(Data("prefs-bench: \(error)\n".utf8))
    exit(1)
}
