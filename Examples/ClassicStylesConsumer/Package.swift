// swift-tools-version: 6.0
// A separate package that uses only Prefs' public API: enum-case keys, a preference group and its
// once-only migration, checked against plain UserDefaults. CI builds and runs it.
import PackageDescription

let package = Package(
    name: "ClassicStylesConsumer",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(name: "Prefs", path: "../..")],
    targets: [
        .executableTarget(
            name: "ClassicStylesConsumer", dependencies: [.product(name: "Prefs", package: "Prefs")])
    ],
    swiftLanguageModes: [.v6]
)
