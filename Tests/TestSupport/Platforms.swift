public import Foundation
public import Testing

/// Whether the tests run on Linux (corelibs Foundation).
public let isLinux: Bool = {
  #if os(Linux)
    true
  #else
    false
  #endif
}()

extension Trait where Self == ConditionTrait {
  /// For tests of what only exists with corelibs Foundation: suite files under `XDG_CONFIG_HOME` (on Apple
  /// platforms the preferences daemon owns the files, and `XDG_CONFIG_HOME` isolates nothing), inotify, `/proc`.
  public static var linuxOnly: Self {
    .enabled(if: isLinux, "Linux only: needs corelibs' suite files under XDG_CONFIG_HOME, inotify or /proc")
  }
}

/// The folder the package's built executables are in: beside the test bundle. On Linux the test runner is that bundle's
/// executable; on macOS the runner is Xcode's `xctest`, which loads the `.xctest` bundle from the build folder.
public let productsFolder: URL = {
  #if os(macOS)
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
      return bundle.bundleURL.deletingLastPathComponent()
    }
  #endif
  return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
}()
