import Foundation

/// An SVG chart of write time against keys stored, Foundation `UserDefaults` against
/// `SQLiteStore`, with one raw SQLite commit (measured in the same run) as a baseline, both axes
/// logarithmic, drawn here (no plotting library).
enum Plot {
    /// `rawCommit`: nanoseconds of one raw SQLite upsert committed alone.
    static func svg(points: [(keys: Int, foundation: Double, sqlite: Double)], rawCommit: Double) -> String {
        let series: [(String, String, (Double, Double) -> Double)] = [
            ("UserDefaults + synchronize()", "#d9534f", { foundation, _ in foundation }),
            ("SQLiteStore", "#337ab7", { _, sqlite in sqlite }),
        ]
        let baselineName = "raw SQLite commit"
        // The legend sits right of the plot: wide enough for its longest label (at 12 px, a
        // character of this font is at most 7 px wide), so no label runs off the edge.
        let longestLabel = (series.map(\.0) + [baselineName]).map(\.count).max() ?? 0
        let (left, top, bottom) = (80.0, 40.0, 60.0)
        let right = 50.0 + 7.0 * Double(longestLabel)
        let (width, height) = (470.0 + right, 420.0)
        let milliseconds = (points.flatMap { [$0.foundation / 1e6, $0.sqlite / 1e6] } + [rawCommit / 1e6])
            .filter { $0 > 0 }
        let yMin = pow(10, floor(log10(milliseconds.min() ?? 0.001)))
        let yMax = pow(10, ceil(log10(milliseconds.max() ?? 1)))
        let xMin = Double(points.map(\.keys).min() ?? 100)
        let xMax = Double(points.map(\.keys).max() ?? 100_000)

        func x(_ keys: Double) -> Double {
            left + (log10(keys) - log10(xMin)) / max(log10(xMax) - log10(xMin), 1e-9) * (width - left - right)
        }
        func y(_ ms: Double) -> Double {
            height - bottom - (log10(ms) - log10(yMin)) / max(log10(yMax) - log10(yMin), 1e-9)
                * (height - top - bottom)
        }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="14">Time per durable write against keys stored (log–log)</text>

            """
        var decade = yMin
        while decade <= yMax * 1.0001 {
            svg += line(left, y(decade), width - right, y(decade), "#ddd")
            svg += text(left - 8, y(decade) + 4, label(ms: decade), anchor: "end")
            decade *= 10
        }
        for point in points {
            svg += line(x(Double(point.keys)), top, x(Double(point.keys)), height - bottom, "#eee")
            svg += text(x(Double(point.keys)), height - bottom + 18, "\(point.keys)", anchor: "middle")
        }
        svg += text((left + width - right) / 2, height - 16, "keys stored", anchor: "middle")
        svg += text(18, (top + height - bottom) / 2, "ms per write", anchor: "middle", rotate: true)
        for (index, (name, colour, pick)) in series.enumerated() {
            let coordinates = points.map {
                "\(x(Double($0.keys))),\(y(pick($0.foundation, $0.sqlite) / 1e6))"
            }
            svg +=
                "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(coordinates.joined(separator: " "))\"/>\n"
            for point in points {
                svg +=
                    "<circle cx=\"\(x(Double(point.keys)))\" cy=\"\(y(pick(point.foundation, point.sqlite) / 1e6))\" r=\"3\" fill=\"\(colour)\"/>\n"
            }
            let legendY = top + 20 + Double(index) * 20
            svg += line(
                width - right + 12, legendY - 4, width - right + 32, legendY - 4, colour, strokeWidth: 2)
            svg += text(width - right + 38, legendY, name, anchor: "start")
        }
        if rawCommit > 0 {
            let baseline = y(rawCommit / 1e6)
            svg +=
                "<line x1=\"\(left)\" y1=\"\(baseline)\" x2=\"\(width - right)\" y2=\"\(baseline)\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n"
            let legendY = top + 20 + Double(series.count) * 20
            svg +=
                "<line x1=\"\(width - right + 12)\" y1=\"\(legendY - 4)\" x2=\"\(width - right + 32)\" y2=\"\(legendY - 4)\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n"
            svg += text(width - right + 38, legendY, baselineName, anchor: "start")
        }
        return svg + "</svg>\n"
    }

    private static func label(ms: Double) -> String {
        ms >= 1
            ? "\(Int(ms)) ms"
            : ms >= 0.001 ? "\(Int((ms * 1000).rounded())) µs" : String(format: "%.0e ms", ms)
    }

    private static func line(
        _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, _ colour: String, strokeWidth: Double = 1
    ) -> String {
        "<line x1=\"\(x1)\" y1=\"\(y1)\" x2=\"\(x2)\" y2=\"\(y2)\" stroke=\"\(colour)\" stroke-width=\"\(strokeWidth)\"/>\n"
    }

    private static func text(
        _ x: Double, _ y: Double, _ content: String, anchor: String, rotate: Bool = false
    ) -> String {
        let transform = rotate ? " transform=\"rotate(-90 \(x) \(y))\"" : ""
        return "<text x=\"\(x)\" y=\"\(y)\" text-anchor=\"\(anchor)\"\(transform)>\(content)</text>\n"
    }
}
