// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Prefs",
    // Synchronization.Mutex and the Observation framework set the floor on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
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
