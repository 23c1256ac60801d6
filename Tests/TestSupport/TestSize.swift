import Foundation

/// How long the tests' long loops run: the one place their sizes come from.
///
/// Loops whose size is what makes them slow (kills of a writer, children started and killed, stress operations,
/// processes racing, randomized histories) take ``standard`` sizes in a plain `swift test`, which a laptop answers in
/// minutes, and ``full`` sizes with `RD_TEST_SIZE=full`, which CI runs as a stage of its own for those tests alone.
/// Both sizes run the same test: the full size only repeats it more often. Each loop's comment says why its standard
/// size still finds what it guards against.
public enum TestSize: String, Sendable {
  /// `swift test` as the README gives it.
  case standard
  /// `RD_TEST_SIZE=full swift test --filter …`: every loop at the size that first found its bugs.
  case full

  /// The size of this run: `RD_TEST_SIZE` (`full` or `standard`), standard when unset. Any other value stops the run
  /// with a message, so that a misspelt `RD_TEST_SIZE=Full` never passes quietly at the standard size.
  public static let current: TestSize = {
    guard let text = ProcessInfo.processInfo.environment["RD_TEST_SIZE"], !text.isEmpty else { return .standard }
    guard let size = TestSize(rawValue: text) else {
      preconditionFailure("RD_TEST_SIZE is '\(text)': it takes 'standard' or 'full'")
    }
    return size
  }()

  /// `standard` in a standard run, `full` in a full one.
  public static func pick<Size>(_ standard: Size, full: Size) -> Size {
    current == .full ? full : standard
  }
}
