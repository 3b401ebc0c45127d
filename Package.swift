// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Prefs",
    // The Observation framework sets the floor on Apple platforms.
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "Prefs", targets: ["Prefs"])
    ],
    targets: [
        .target(name: "Prefs"),
        // A small program the tests start as a separate process (cross-process behaviour).
        .executableTarget(name: "PrefsTestHelper", dependencies: ["Prefs"]),
        .testTarget(name: "PrefsTests", dependencies: ["Prefs", "PrefsTestHelper"]),
    ],
    swiftLanguageModes: [.v6]
)
