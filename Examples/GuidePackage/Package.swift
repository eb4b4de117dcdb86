// swift-tools-version:6.0
// An app outside Marquee that depends on it by path, as the README's first example asks: it builds
// the AV Foundation guide's "Putting It All Together" with the `Display` library. The repository's
// own Package.swift does not see it; Tests/ExamplesTests/GuidePackageTests.swift copies it to a
// temporary folder with the checkout's absolute path in place of "../.." and builds and runs it.
import PackageDescription

let package = Package(
    name: "GuidePlayer",
    dependencies: [
        .package(name: "Marquee", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "GuidePlayer", dependencies: [.product(name: "Display", package: "Marquee")]),
    ]
)
