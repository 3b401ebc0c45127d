import Foundation

/// One line of the report.
struct Metric {
    let key: String
    let what: String
    let baseline: Double?
    let value: Double
    let unit: String
    let goal: Goal?

    enum Goal {
        case atMost(Double)
        case equals(Double)

        var text: String {
            switch self {
            case .atMost(let limit): "≤ \(Report.format(limit))"
            case .equals(let target): "= \(Report.format(target))"
            }
        }

        func holds(_ value: Double) -> Bool {
            switch self {
            case .atMost(let limit): value <= limit
            case .equals(let target): value == target
            }
        }
    }
}

enum Report {
    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.3f", value)
    }

    static func table(_ metrics: [Metric], repetitions: Int, quick: Bool) -> String {
        var lines = [
            "prefs-bench (\(quick ? "--quick" : "full sizes"); each figure the median of \(repetitions) repetitions after a warm-up)",
            "",
            pad(["metric", "baseline", "Prefs", "unit", "goal", "holds"]),
        ]
        for metric in metrics {
            let holds = metric.goal.map { $0.holds(metric.value) ? "yes" : "NO" } ?? "(report)"
            lines.append(
                pad([
                    metric.key, metric.baseline.map(format) ?? "—", format(metric.value), metric.unit,
                    metric.goal?.text ?? "—", holds,
                ]))
        }
        lines.append("")
        for metric in metrics { lines.append("  \(metric.key): \(metric.what)") }
        return lines.joined(separator: "\n")
    }

    private static func pad(_ columns: [String]) -> String {
        let widths = [36, 12, 12, 10, 9, 8]
        return zip(columns, widths).map {
            $0.padding(toLength: max($1, $0.count), withPad: " ", startingAt: 0)
        }
        .joined(separator: " ")
    }

    static func json(_ metrics: [Metric]) -> String {
        let entries = metrics.map { "  \"\($0.key)\": \($0.value.isFinite ? "\($0.value)" : "null")" }
        return "{\n" + entries.joined(separator: ",\n") + "\n}"
    }
}
