// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Prefs",
    // The Observation framework sets the floor on Apple platforms.
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "Prefs", targets: ["Prefs"]),
        .executable(name: "prefs", targets: ["PrefsCLI"]),
        .library(name: "PrefsPostgres", targets: ["PrefsPostgres"]),
        .executable(name: "prefs-bench", targets: ["prefs-bench"]),
    ],
    targets: [
        .target(
            name: "Prefs",
            dependencies: [
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows]))
            ]
        ),
        // The system SQLite on Linux (Apple platforms import the SDK's SQLite3 module).
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]),
        // PostgresStore, a product of its own so the core needs no libpq.
        .target(name: "PrefsPostgres", dependencies: ["Prefs", "CLibPQ"]),
        .systemLibrary(
            name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        // The command-line tool: macOS `defaults` for every store. The target's name differs from
        // the library's by more than case (macOS file systems ignore case); the command is `prefs`.
        .executableTarget(name: "PrefsCLI", dependencies: ["PrefsTool"]),
        // The tool's commands and its plist readers and writers, as a library the fuzzers share.
        .target(name: "PrefsTool", dependencies: ["Prefs", "PrefsPostgres"]),
        // libFuzzer targets for every decoder of outside bytes (see Fuzz/README.md).
        .executableTarget(name: "PrefsFuzz", dependencies: ["Prefs", "PrefsTool"]),
        // The benchmarks: `swift run -c release prefs-bench` (raw SQLite and libpq are baselines).
        .executableTarget(
            name: "prefs-bench",
            dependencies: [
                "Prefs", "PrefsPostgres", "CLibPQ",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
            ]
        ),
        // A small program the tests start as a separate process (cross-process behaviour).
        .executableTarget(name: "PrefsTestHelper", dependencies: ["Prefs", "PrefsPostgres"]),
        .testTarget(name: "PrefsTests", dependencies: ["Prefs", "PrefsTestHelper"]),
        .testTarget(name: "PrefsCLITests", dependencies: ["PrefsCLI", "PrefsTestHelper"]),
        .testTarget(
            name: "PrefsPostgresTests",
            dependencies: ["Prefs", "PrefsPostgres", "PrefsTestHelper", "PrefsCLI"]),
    ],
    swiftLanguageModes: [.v6]
)
