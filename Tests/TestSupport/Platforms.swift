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

#if canImport(Darwin)
  /// A class of this target, which is linked into each test bundle: its bundle is the test bundle.
  private final class ProductsFolderAnchor {}
#endif

/// The folder the package's built executables are in: beside the test bundle. On Linux the test runner is that bundle's
/// executable (`argv[0]`). On Apple platforms the runner is another program that loads the `.xctest` bundle from the
/// build folder (Xcode's `xctest`, or `swiftpm-testing-helper`, which Swift Testing runs under, whose `argv[0]` is
/// itself): the bundle of a class of this target is the test bundle.
public let productsFolder: URL = {
  #if canImport(Darwin)
    let bundle = Bundle(for: ProductsFolderAnchor.self).bundleURL
    if bundle.pathExtension == "xctest" { return bundle.deletingLastPathComponent() }
    // swiftpm-testing-helper --test-bundle-path <products>/X.xctest/Contents/MacOS/X
    let arguments = CommandLine.arguments
    if let index = arguments.firstIndex(of: "--test-bundle-path"), index + 1 < arguments.count {
      var url = URL(fileURLWithPath: arguments[index + 1])
      while url.pathComponents.count > 1, url.pathExtension != "xctest" { url.deleteLastPathComponent() }
      if url.pathExtension == "xctest" { return url.deletingLastPathComponent() }
    }
    return bundle.deletingLastPathComponent()
  #else
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  #endif
}()

/// The folder the tests start the package's executables from (`rdefaults`, `rdefaults-test-helper`): the products
/// folder, or `TEST_TOOLS_FOLDER` when set. `.ci/run`'s thread-sanitizer stage sets it to the plain build's folder:
/// the sanitizer watches the test process, where the library's threads are exercised, and the second processes the
/// tests start (hundreds of tool runs and writers saving thousands of times) run at full speed beside it.
public let toolsFolder: URL = {
  if let folder = ProcessInfo.processInfo.environment["TEST_TOOLS_FOLDER"], !folder.isEmpty {
    return URL(fileURLWithPath: folder, isDirectory: true)
  }
  return productsFolder
}()
