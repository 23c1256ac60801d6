// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "ReactiveDefaults",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "ReactiveDefaults", targets: ["ReactiveDefaults"]),
    .executable(name: "rdefaults", targets: ["rdefaults"]),
  ],
  traits: [
    .trait(
      name: "RxSwift",
      description: "DefaultsProperty as an RxSwift Observable and observer (any RxSwift 6.x from 6.5)."),
    .trait(
      name: "RxCocoa",
      description: "UserDefaults.rx.default(forKey:), .rx.url(forKey:) and store.rx.property(_:) as ControlProperty. "
        + "On Linux, RxCocoa exists up to RxSwift 6.9.x.",
      enabledTraits: ["RxSwift"]),
    .default(enabledTraits: []),
  ],
  // Used only under the traits above: the default build resolves nothing.
  dependencies: [
    .package(url: "https://github.com/ReactiveX/RxSwift.git", "6.5.0"..<"7.0.0")
  ],
  targets: [
    .target(
      name: "ReactiveDefaults",
      dependencies: [
        .product(name: "RxSwift", package: "RxSwift", condition: .when(traits: ["RxSwift"])),
        .product(name: "RxCocoa", package: "RxSwift", condition: .when(traits: ["RxCocoa"])),
      ]
    ),
    .target(name: "ReactiveDefaultsCLI", dependencies: ["ReactiveDefaults", "ChildProcess"]),
    .executableTarget(name: "rdefaults", dependencies: ["ReactiveDefaultsCLI"]),
    // A second process for the durability tests, and the randomized multi-process history checker; not a product.
    .executableTarget(
      name: "rdefaults-test-helper", dependencies: ["ReactiveDefaults", "HistoryChecker", "ChildProcess"]),
    // The history checker's plans and verdicts, pure (no I/O), so the tests can feed it histories; not a product.
    .target(name: "HistoryChecker"),
    // Child processes for the tool, the tests and the test helper, without Foundation's `Process` and its Dispatch
    // read sources (which crash on Linux when several threads start and end children); not a product.
    .target(name: "ChildProcess"),
    // What every test target waits with; not a product.
    .target(name: "TestSupport", dependencies: ["ChildProcess"], path: "Tests/TestSupport"),
    .testTarget(
      name: "ReactiveDefaultsCLITests",
      dependencies: [
        "ReactiveDefaultsCLI", "ReactiveDefaults", "rdefaults", "rdefaults-test-helper", "TestSupport",
        "HistoryChecker",
        "ChildProcess",
      ]
    ),
    // The article snippets, compiled, and README.md's, type-checked: kept apart because they declare keys of their own.
    .testTarget(name: "DocumentationTests", dependencies: ["ReactiveDefaults", "TestSupport"]),
    // Compiled only with the RxSwift or RxCocoa trait; empty otherwise.
    .testTarget(
      name: "ReactiveDefaultsRxTests",
      dependencies: [
        "ReactiveDefaults", "rdefaults", "TestSupport", "ChildProcess",
        .product(name: "RxSwift", package: "RxSwift", condition: .when(traits: ["RxSwift"])),
        .product(name: "RxCocoa", package: "RxSwift", condition: .when(traits: ["RxCocoa"])),
      ]
    ),
    .testTarget(
      name: "ReactiveDefaultsTests",
      dependencies: ["ReactiveDefaults", "TestSupport"],
      resources: [.copy("Fixtures")]
    ),
  ],
  swiftLanguageModes: [.v6]
)

for target in package.targets {
  target.swiftSettings =
    (target.swiftSettings ?? []) + [
      .enableUpcomingFeature("ExistentialAny"),
      .enableUpcomingFeature("InternalImportsByDefault"),
      .enableUpcomingFeature("MemberImportVisibility"),
    ]
}
