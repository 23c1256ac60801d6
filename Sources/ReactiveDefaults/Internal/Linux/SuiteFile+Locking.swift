import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The suite's advisory lock: a `flock` of `<suite>.plist.lock`, which every process using the library takes to
/// save, edit or reload the suite.
extension SuiteFile {
  // MARK: Locking

  /// Runs `body` holding an exclusive `flock` on the sidecar lock file beside the plist, so that saves and
  /// reloads of processes using the library never interleave. The lock file is created if needed (with its
  /// folder), never through a link, and must be a regular file.
  func withLock<T>(_ body: () throws(SaveFailure) -> T) throws(SaveFailure) -> T {
    let descriptor = try openLock(creating: true)
    defer { close(descriptor) }
    // Uncontended (the common case): one call. Else the wait is announced (to tests), then waited out.
    if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
      guard errno == EWOULDBLOCK || errno == EINTR else { throw SaveFailure(operation: "cannot lock \(lockPath)") }
      Self.lockWaits.withLock { $0 }?(lockPath)
      while flock(descriptor, LOCK_EX) != 0 {
        guard errno == EINTR else { throw SaveFailure(operation: "cannot lock \(lockPath)") }
      }
    }
    defer { flock(descriptor, LOCK_UN) }
    return try body()
  }

  /// Told the lock file's path each time a thread of this process is about to wait for a suite's lock that another
  /// holder has (tests use it to let a waiter in at a chosen moment: no event tells that a thread waits in `flock`).
  static let lockWaits = Locked<(@Sendable (String) -> Void)?>(nil)

  private func openLock(creating: Bool) throws(SaveFailure) -> Int32 {
    var info = stat()
    if stat(folder, &info) != 0 {
      guard errno == ENOENT else { throw SaveFailure(operation: "cannot use the folder \(folder)") }
      do {
        try FileManager.default.createDirectory(
          atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      } catch {
        // The system's reason (errno of the failed mkdir), which Foundation's error gives only as a Cocoa code.
        throw SaveFailure(operation: "cannot create the folder \(folder)")
      }
    }
    let descriptor = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
      if errno == ELOOP { throw SaveFailure("the lock file \(lockPath) is a symbolic link; it was left alone") }
      throw SaveFailure(operation: "cannot open the lock file \(lockPath)")
    }
    guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      throw SaveFailure("the lock file \(lockPath) is not a regular file; it was left alone")
    }
    return descriptor
  }
}
