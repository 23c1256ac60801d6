import ChildProcess
// What the history checker's worker and driver share: the clock, a lock ThreadSanitizer sees, the event log, and
// starting programs.
import Dispatch
import Foundation
import HistoryChecker

// `timespec`'s members come through CoreFoundation where Foundation is corelibs'.
#if canImport(CoreFoundation)
  import CoreFoundation
#endif
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The monotonic clock every process of the machine shares, in nanoseconds.
func monotonicNow() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A value behind an `NSLock`: a pthread mutex, which ThreadSanitizer understands (on Linux it cannot see
/// `Synchronization.Mutex`, and the helper runs under the sanitizer in CI).
final class Guarded<Value>: @unchecked Sendable {  // `value` is only touched under `lock`
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}

/// Writes one JSON line to standard output at once (a killed worker leaves every line it logged).
final class EventLog: Sendable {
  private let lock = Guarded(())
  let worker: Int

  init(worker: Int) { self.worker = worker }

  func log(_ event: HistoryEvent) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    guard var line = try? encoder.encode(event) else { return }
    line.append(UInt8(ascii: "\n"))
    lock.withLock { _ in
      line.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
          let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
          if written <= 0 {
            if errno == EINTR { continue }
            return
          }
          offset += written
        }
      }
    }
  }
}

/// The folder of this executable (where `rdefaults` is built too).
let helperFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()

/// Runs a program to completion, its output discarded; its exit status (-1 when it could not start, or did not
/// exit normally).
///
/// The child stays in this process's group, unlike Foundation's `Process`'s (`POSIX_SPAWN_SETPGROUP`): a tool a worker
/// started in a group of its own outlived the kill of the worker's group and went on saving after the driver had read
/// the files, which read as an anomaly of the library. A child started here dies with the worker's group.
func runProgram(_ path: String, _ arguments: [String], environment: [String: String]? = nil) -> Int32 {
  guard
    let child = try? ChildProcess(
      executable: path, arguments: arguments, environment: environment ?? ProcessInfo.processInfo.environment,
      ownProcessGroup: false)
  else { return -1 }
  let status = child.waitUntilExit()
  return child.wasSignalled ? -1 : status
}
