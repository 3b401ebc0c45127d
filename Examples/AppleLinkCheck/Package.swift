// swift-tools-version: 6.0
// A dynamic library that uses Prefs, for the Apple workflow: building a static library never
// links, so a symbol Apple's toolchain lacks (`___cpu_model`, say) would pass unseen. Linking
// this framework for each platform, and for both simulator slices, finds it. CI on Linux builds
// it too, so it keeps compiling.
import PackageDescription

let package = Package(
    name: "AppleLinkCheck",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [.library(name: "PrefsLinkCheck", type: .dynamic, targets: ["PrefsLinkCheck"])],
    dependencies: [.package(name: "Prefs", path: "../..")],
    targets: [
        .target(name: "PrefsLinkCheck", dependencies: [.product(name: "Prefs", package: "Prefs")])
    ],
    swiftLanguageModes: [.v6]
)
