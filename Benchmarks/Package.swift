// swift-tools-version: 6.1
import Foundation
import PackageDescription

// A path dependency's identity is its folder's name, which depends on where the repository was cloned.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
  name: "Benchmarks",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  dependencies: [.package(path: "..")],
  targets: [
    .executableTarget(
      name: "rdefaults-bench",
      dependencies: [
        .product(name: "ReactiveDefaults", package: root.lastPathComponent),
        // Built beside the benchmark, which times the tool's `import` and `export` as whole processes.
        .product(name: "rdefaults", package: root.lastPathComponent),
      ]
    )
  ],
  swiftLanguageModes: [.v6]
)
