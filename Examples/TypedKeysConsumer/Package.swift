// swift-tools-version: 6.0
// A separate package that depends on Prefs by path, as a user's package would: CI builds and runs
// it to check that the README's "Typed keys" usage compiles unchanged against the public API.
import PackageDescription

let package = Package(
    name: "TypedKeysConsumer",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(name: "Prefs", path: "../..")],
    targets: [
        .executableTarget(
            name: "TypedKeysConsumer", dependencies: [.product(name: "Prefs", package: "Prefs")])
    ],
    swiftLanguageModes: [.v6]
)
