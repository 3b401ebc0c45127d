// swift-tools-version: 6.2
import PackageDescription

// prefs-bench, a package of its own so that a program depending on Prefs never resolves, builds
// or sees it. It uses Prefs' public API only, as an app would:
//
//   swift run -c release --package-path Benchmarks prefs-bench [--quick] [--json] [--only TEXT]
//
// Its baselines are the system SQLite and libpq (linked), and LMDB (`liblmdb-dev`, opened with
// dlopen when the benchmark runs, so building needs nothing more than the library does).

/// PostgreSQL is measured on Linux, and on macOS with the `PostgreSQL` trait (as in Prefs).
let postgresPlatforms: [Platform] = [.linux, .android, .windows]

let package = Package(
    name: "PrefsBenchmarks",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    traits: [
        .trait(name: "PostgreSQL", description: "Measure PostgresStore on macOS (needs Homebrew's libpq)")
    ],
    dependencies: [
        .package(
            name: "Prefs", path: "..",
            traits: [.defaults, .trait(name: "PostgreSQL", condition: .when(traits: ["PostgreSQL"]))])
    ],
    targets: [
        .executableTarget(
            name: "prefs-bench",
            dependencies: [
                .product(name: "Prefs", package: "Prefs"),
                .target(name: "BenchSQLite", condition: .when(platforms: postgresPlatforms)),
                .product(
                    name: "PrefsPostgres", package: "Prefs", condition: .when(platforms: postgresPlatforms)),
                .product(
                    name: "PrefsPostgres", package: "Prefs",
                    condition: .when(platforms: [.macOS], traits: ["PostgreSQL"])),
                .target(name: "BenchLibPQ", condition: .when(platforms: postgresPlatforms)),
                .target(name: "BenchLibPQ", condition: .when(platforms: [.macOS], traits: ["PostgreSQL"])),
            ],
            swiftSettings: [
                .define("PREFS_POSTGRESQL", .when(platforms: postgresPlatforms)),
                .define("PREFS_POSTGRESQL", .when(platforms: [.macOS], traits: ["PostgreSQL"])),
            ]
        ),
        // The system SQLite on Linux, the raw baseline (Apple platforms import the SDK's SQLite3).
        .systemLibrary(
            name: "BenchSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]),
        // libpq, for the raw PostgreSQL baseline.
        .systemLibrary(
            name: "BenchLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
    ],
    swiftLanguageModes: [.v6]
)
