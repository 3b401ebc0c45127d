// swift-tools-version: 6.2
// (6.2: the tests use exit tests; package traits need 6.1.)
import PackageDescription

/// PostgreSQL support (`PrefsPostgres`, and PostgreSQL in the `prefs` tool, the benchmark and the
/// tests) is built on Linux, where `libpq-dev` is a package away, and on macOS only with the
/// `PostgreSQL` trait (Homebrew's `libpq`): a Mac with nothing but Xcode builds and tests the
/// rest, and an app that uses `Prefs` alone never needs pkg-config or libpq.
let postgresPlatforms: [Platform] = [.linux, .android, .windows]

/// A dependency on `name` wherever PostgreSQL support is built.
func whereverPostgres(_ name: String) -> [Target.Dependency] {
    [
        .target(name: name, condition: .when(platforms: postgresPlatforms)),
        .target(name: name, condition: .when(platforms: [.macOS], traits: ["PostgreSQL"])),
    ]
}

/// `#if PREFS_POSTGRESQL` wherever PostgreSQL support is built.
let postgresSettings: [SwiftSetting] = [
    .define("PREFS_POSTGRESQL", .when(platforms: postgresPlatforms)),
    .define("PREFS_POSTGRESQL", .when(platforms: [.macOS], traits: ["PostgreSQL"])),
]

let package = Package(
    name: "Prefs",
    // The Observation framework sets the floor on Apple platforms.
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "Prefs", targets: ["Prefs"]),
        .executable(name: "prefs", targets: ["PrefsCLI"]),
        .library(name: "PrefsPostgres", targets: ["PrefsPostgres"]),
    ],
    traits: [
        .trait(
            name: "PostgreSQL",
            description:
                "PostgresStore on macOS (needs libpq: brew install libpq, and its pkgconfig folder on PKG_CONFIG_PATH); always on for Linux"
        )
    ],
    targets: [
        .target(
            name: "Prefs",
            dependencies: [
                "CPrefsShared", "PrefsSupport", "PrefsModel", "PrefsEngine",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
                .target(name: "CPrefsSecretService", condition: .when(platforms: [.linux, .android])),
            ],
            // The privacy manifest an app embedding Prefs needs for App Store upload.
            resources: [.copy("PrivacyInfo.xcprivacy")]
        ),
        // The SQLite store's engine: the journal shared by processes (its file, header, records,
        // lock and wake-ups), the connection to SQLite, background time on Apple platforms, and
        // the system calls it and the stores make, with a small package-level API the store
        // uses. Not a product.
        .target(
            name: "PrefsEngine",
            dependencies: [
                "CPrefsShared", "PrefsSupport", "PrefsModel",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
            ]),
        // The model every store speaks, below the stores and the engine: the property-list value
        // and its stored encoding, keys, changes and their observers, transactions, and the two
        // errors. `Prefs` re-exports it whole, so its types are `Prefs`' own to a user (and in
        // its documentation and symbol count: .ci/symbol-graphs extracts them as `Prefs`'). Not a
        // product.
        .target(name: "PrefsModel", dependencies: ["PrefsSupport"]),
        // What every module of the package shares and none owns: the lock around shared state,
        // an atomic word, `Duration` in the units system calls take, validated UTF-8.
        .target(name: "PrefsSupport", dependencies: ["CPrefsShared"]),
        // Atomics and futex waits on memory shared between processes, and notify(3): the few
        // lines Swift cannot say (the SQLite store's change signal).
        .target(name: "CPrefsShared"),
        // The Secret Service through libsecret, opened with dlopen when a secret key is first
        // used: nothing to build against, and a clear error where libsecret is missing.
        .target(name: "CPrefsSecretService", linkerSettings: [.linkedLibrary("dl")]),
        // The system SQLite on Linux (Apple platforms import the SDK's SQLite3 module).
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]),
        // PostgresStore, a product of its own so the core needs no libpq (an empty module where
        // PostgreSQL support is not built).
        .target(
            name: "PrefsPostgres", dependencies: ["Prefs", "PrefsSupport"] + whereverPostgres("CLibPQ"),
            swiftSettings: postgresSettings),
        .systemLibrary(
            name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        // The command-line tool: macOS `defaults` for every store. The target's name differs from
        // the library's by more than case (macOS file systems ignore case); the command is `prefs`.
        .executableTarget(name: "PrefsCLI", dependencies: ["PrefsTool"]),
        // The tool's commands and its plist readers and writers, as a library the fuzzers share.
        .target(
            name: "PrefsTool", dependencies: ["Prefs", "PrefsSupport"] + whereverPostgres("PrefsPostgres"),
            swiftSettings: postgresSettings),
        // libFuzzer targets for every decoder of outside bytes (see Fuzz/README.md).
        .executableTarget(
            name: "PrefsFuzz", dependencies: ["Prefs", "PrefsEngine", "PrefsTool"], path: "Fuzz/PrefsFuzz"),
        // A small program the tests start as a separate process (cross-process behaviour).
        .executableTarget(
            name: "PrefsTestHelper",
            dependencies: ["Prefs", "PrefsEngine", "PrefsTestSupport"] + whereverPostgres("PrefsPostgres"),
            path: "Tests/PrefsTestHelper",
            swiftSettings: postgresSettings),
        // What every test target shares: finding and running the package's executables, waiting,
        // checking that synced replicas agree.
        .target(name: "PrefsTestSupport", dependencies: ["Prefs"], path: "Tests/PrefsTestSupport"),
        // The few system calls the tests make that Swift cannot say (behind GNU-only macros).
        .target(name: "CPrefsTestSupport", path: "Tests/CPrefsTestSupport"),
        .testTarget(
            name: "PrefsTests",
            dependencies: [
                "Prefs", "PrefsModel", "PrefsEngine", "PrefsSupport", "PrefsTestSupport", "CPrefsTestSupport",
                "PrefsTestHelper",
            ]),
        // The engine's parts tested without Prefs: the journal's layout and checksum, the lock's
        // priority, the system-call layer, the check that the opened file is still at its path.
        .testTarget(
            name: "PrefsEngineTests",
            dependencies: [
                "PrefsEngine", "PrefsSupport", "CPrefsShared", "CPrefsTestSupport", "PrefsTestSupport",
            ]),
        .testTarget(
            name: "PrefsCLITests",
            dependencies: ["PrefsTestSupport", "PrefsCLI", "PrefsTool", "PrefsTestHelper"]),
        .testTarget(
            name: "PrefsPostgresTests",
            dependencies: [
                "Prefs", "PrefsEngine", "PrefsSupport", "PrefsTestSupport", "PrefsTestHelper", "PrefsCLI",
            ]
                + whereverPostgres("PrefsPostgres"),
            swiftSettings: postgresSettings),
    ],
    swiftLanguageModes: [.v6]
)
