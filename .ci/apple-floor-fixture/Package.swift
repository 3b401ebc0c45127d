// swift-tools-version: 6.2
// The self-test of .ci/check-apple-floor: uses above the floor planted on purpose. Lines ending
// in `// caught` must be reported by the check; every other line must not be.
import PackageDescription

let package = Package(
    name: "Planted",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    targets: [.target(name: "Planted")],
    swiftLanguageModes: [.v6]
)
