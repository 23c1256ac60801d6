import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The file's advisory lock: a `flock` of `<file>.lock`, which every process using the library takes to save, edit
/// or reload the file.
extension SuiteFile {
  // MARK: Locking

  /// Runs `body` holding an exclusive `flock` on the sidecar lock file beside the plist, so that saves and
  /// reloads of processes using the library never interleave. The lock file is created if needed (with its
  /// folder), never through a link, and must be a regular file.
  func withLock<T>(_ body: () throws(SaveFailure) -> T) throws(SaveFailure) -> T {
    // Uncontended (the common case): taken at once. Else the wait is announced (to tests), then waited out.
    let unlock = try system.lock(lockPath, folder) { Self.lockWaits.withLock { $0[lockPath] }?() }
    defer { unlock() }
    return try body()
  }

  /// Called, by lock file path, each time a thread of this process is about to wait for that lock while another holder
  /// has it (tests use it to let a waiter in at a chosen moment: no event tells that a thread waits in `flock`).
  static let lockWaits = Locked<[String: @Sendable () -> Void]>([:])

  /// Told what each save did (diagnosis of the history checker's findings).
  static let saveTrace = Locked<(@Sendable (String) -> Void)?>(nil)
}
