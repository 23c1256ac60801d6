import ChildProcess
import Dispatch
import Foundation

/// A worker process and the lines it printed.
///
/// Started as a ``ChildProcess`` (blocking reads on threads of their own), not a `Process` with a
/// `readabilityHandler`: the checker starts and kills thousands of workers, and libdispatch's read sources crash the
/// driver when children end on several threads at once (swift-corelibs-libdispatch#949).
final class WorkerProcess: Sendable {
  let process: ChildProcess
  let output = LineBuffer()

  /// Closes the worker's input (the output's reading thread closes its own end at end of file).
  func closePipes() {
    process.closeInput()
  }

  convenience init(planPath: String, index: Int, folder: String) throws {
    try self.init(arguments: ["worker", planPath, "\(index)"], configHome: folder)
  }

  /// This helper with `arguments`, its suites under `configHome`.
  init(arguments: [String], configHome: String) throws {
    let output = output
    process = try ChildProcess(
      executable: CommandLine.arguments[0], arguments: arguments,
      environment: ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": configHome]) { $1 },
      input: true, output: { output.feed($0) }, onExit: { _ in output.changed.signal() })
  }

  func send(_ line: String) {
    process.send(Data((line + "\n").utf8))
  }

  /// Waits until a printed line satisfies `predicate`, or the process exits, or `deadline` passes.
  func wait(until predicate: (String) -> Bool, deadline: DispatchTime) -> Bool {
    while true {
      if output.lines.contains(where: predicate) { return true }
      if !process.isRunning { return output.lines.contains(where: predicate) }
      if output.changed.wait(timeout: deadline) == .timedOut { return false }
    }
  }

  /// Waits for the exit; false past `deadline`.
  func waitForExit(deadline: DispatchTime) -> Bool {
    process.waitForExit(deadline: deadline)
  }
}
