import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where corelibs Foundation keeps a suite's plist, and the advisory lock taken around its saves and reloads.
struct SuiteFile: Sendable {
  /// The folder: `$XDG_CONFIG_HOME` when it is absolute, else `$HOME/.config` (corelibs' rule, read from the
  /// environment the process started with, as corelibs does).
  let folder: String
  /// The plist's file name, `<suite>.plist`.
  let fileName: String

  var path: String { folder + "/" + fileName }
  var domainName: String { String(fileName.dropLast(".plist".count)) }
  var lockPath: String { path + ".lock" }

  static var preferencesFolder: String {
    let environment = ProcessInfo.processInfo.environment
    if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
    return NSHomeDirectory() + "/.config"
  }

  /// The domain name of `UserDefaults.standard`: the bundle identifier, else the executable's name.
  static var standardDomainName: String {
    Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
  }

  init(suiteName: String) {
    folder = Self.preferencesFolder
    fileName = suiteName + ".plist"
  }

  /// Runs `body` holding an exclusive `flock` on the sidecar lock file beside the plist, so that saves and
  /// reloads of processes using the library never interleave. Without a lock file (an unwritable folder)
  /// `body` runs unlocked.
  func withLock<T>(_ body: () throws -> T) rethrows -> T {
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return try body() }
    defer { close(descriptor) }
    while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
    defer { flock(descriptor, LOCK_UN) }
    return try body()
  }
}
