// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "ReactiveDefaults",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "ReactiveDefaults", targets: ["ReactiveDefaults"]),
    .executable(name: "rdefaults", targets: ["rdefaults"]),
  ],
  targets: [
    .target(name: "ReactiveDefaults"),
    .target(name: "ReactiveDefaultsCLI", dependencies: ["ReactiveDefaults"]),
    .executableTarget(name: "rdefaults", dependencies: ["ReactiveDefaultsCLI"]),
    // A second process for the durability tests; not a product.
    .executableTarget(name: "rdefaults-test-helper", dependencies: ["ReactiveDefaults"]),
    .testTarget(
      name: "ReactiveDefaultsCLITests",
      dependencies: ["ReactiveDefaultsCLI", "ReactiveDefaults", "rdefaults", "rdefaults-test-helper"]
    ),
    // The article snippets, compiled: kept apart because they declare keys of their own.
    .testTarget(name: "DocumentationTests", dependencies: ["ReactiveDefaults"]),
    .testTarget(
      name: "ReactiveDefaultsTests",
      dependencies: ["ReactiveDefaults"],
      resources: [.copy("Fixtures")]
    ),
  ],
  swiftLanguageModes: [.v6]
)

for target in package.targets {
  target.swiftSettings = (target.swiftSettings ?? []) + [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
  ]
}
