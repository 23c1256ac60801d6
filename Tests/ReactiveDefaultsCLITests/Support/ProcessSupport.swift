import ChildProcess
import Foundation
import Synchronization
import TestSupport

@testable import ReactiveDefaults

/// A fresh, empty preferences folder for one test's child processes; removed when the test process exits.
func makeConfigFolder() -> String {
  let path = NSTemporaryDirectory() + "rdefaults-tests-" + UUID().uuidString
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  madeConfigFolders.withLock { $0.append(path) }
  _ = removesConfigFoldersAtExit
  return path
}

/// The folders `makeConfigFolder` made in this process.
private let madeConfigFolders = Locked<[String]>([])

/// Removes the made folders at exit: a run of the suite made about 500, and nothing removed them (a day of runs left
/// 13,000 in the temporary folder). Every child a test starts has ended by then: the tests wait for them.
private let removesConfigFoldersAtExit: Void = {
  atexit {
    for path in madeConfigFolders.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
  }
}()

/// A fresh suite name (`<label>-<UUID>`) for a suite in this process's preferences folder; its files are removed when
/// the test process exits, after the library's pending saves (a removal at the end of the test could come before a
/// coalesced save that makes the file again). `.ci/run` fails when `swift test` leaves a suite file behind.
func makeSuiteName(_ label: String) -> String {
  let name = "\(label)-\(UUID().uuidString)"
  madeSuites.withLock { $0.append(name) }
  _ = removesMadeSuitesAtExit
  return name
}

/// The suites `makeSuiteName` made in this process.
private let madeSuites = Locked<[String]>([])

private let removesMadeSuitesAtExit: Void = {
  atexit {
    SaveOnExit.saveAll()
    let names = madeSuites.withLock { $0 }
    let folder = SuiteFile.preferencesFolder
    let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
      .filter { file in names.contains { file.hasPrefix($0 + ".plist") } }
    for file in files { try? FileManager.default.removeItem(atPath: folder + "/" + file) }
  }
}()

/// The preferences folder of this test process (children given it share the test's suites).
var processConfigFolder: String {
  let environment = ProcessInfo.processInfo.environment
  if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
  return NSHomeDirectory() + "/.config"
}

struct ProcessResult {
  var status: Int32
  var output: String
  var error: String
}

/// Runs a built executable to completion, on a Dispatch thread: waiting for a child must not hold one of the
/// few threads Swift concurrency runs every test's tasks on.
@discardableResult
func runTool(
  _ arguments: [String], config: String, input: String? = nil, tool: String = "rdefaults"
) async throws -> ProcessResult {
  try await offThePool { try runToolBlocking(arguments, config: config, input: input, tool: tool) }
}

/// A built product by name, or any program by absolute path.
private func executablePath(_ tool: String) -> String {
  tool.hasPrefix("/") ? tool : toolsFolder.appendingPathComponent(tool).path
}

/// This process's environment with the child's own preferences folder.
private func environment(config: String) -> [String: String] {
  ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": config]) { $1 }
}

private func runToolBlocking(
  _ arguments: [String], config: String, input: String?, tool: String
) throws -> ProcessResult {
  let (status, output, error) = try ChildProcess.run(
    executable: executablePath(tool), arguments: arguments, environment: environment(config: config),
    input: Data((input ?? "").utf8))
  return ProcessResult(
    status: status, output: String(decoding: output, as: UTF8.self), error: String(decoding: error, as: UTF8.self))
}

/// A child process that keeps running; its output lines are collected as they come.
///
/// Its output is read by ``ChildProcess``'s blocking reads on threads of their own, never by a
/// `FileHandle.readabilityHandler`: libdispatch's read sources, torn down while children die on several threads,
/// crashed `swift test` in `_dispatch_event_loop_drain` (``ChildProcessChurnTests`` reproduces it).
final class RunningTool: Sendable {
  let process: ChildProcess
  let lines = LineRecorder()
  let errorLines = LineRecorder()

  init(_ arguments: [String], config: String, tool: String = "rdefaults") throws {
    let lines = lines
    let errorLines = errorLines
    process = try ChildProcess(
      executable: executablePath(tool), arguments: arguments, environment: environment(config: config),
      input: true, output: { lines.feed($0) }, error: { errorLines.feed($0) })
  }

  /// Sends one line to the process's standard input.
  func send(_ line: String) {
    process.send(Data((line + "\n").utf8))
  }

  /// Waits (off the concurrency pool) until the process has exited by itself; false after `timeout` seconds.
  func exited(timeout: Double = 30) async -> Bool {
    let process = process
    let limit = timeout * timeoutScale
    return (try? await offThePool { process.waitForExit(deadline: .now() + limit) }) ?? false
  }

  func kill(_ signalNumber: Int32) async {
    process.signal(signalNumber)
    _ = await exited(timeout: 60)
  }
}

/// Splits bytes into lines, recorded by a ``Recorder`` (a test waits on it, bounded by a timeout).
final class LineRecorder: Sendable {
  private let buffer = Locked(Data())
  private let recorder = Recorder<String>()

  var lines: [String] { recorder.values }

  func feed(_ data: Data) {
    let complete = buffer.withLock { buffer -> [String] in
      buffer.append(data)
      var lines: [String] = []
      while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        lines.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
        buffer.removeSubrange(buffer.startIndex...newline)
      }
      return lines
    }
    for line in complete { recorder.append(line) }
  }

  /// Waits until `predicate` holds for the lines so far; false after `timeout` seconds.
  func wait(timeout: Double = 30, until predicate: @escaping @Sendable ([String]) -> Bool) async -> Bool {
    await recorder.wait(timeout: timeout, until: predicate)
  }
}
