import Dispatch
import Foundation

/// A worker process and the lines it printed.
final class WorkerProcess: Sendable {
  let process: Process
  let output = LineBuffer()
  let ended = DispatchSemaphore(value: 0)
  private let input = Pipe()
  private let outputPipe: Pipe

  /// Closes this end of the pipes: a driver runs thousands of histories, and each left four descriptors open.
  func closePipes() {
    try? input.fileHandleForWriting.close()  // already closed when the worker never read its settle line
    outputPipe.fileHandleForReading.readabilityHandler = nil
    try? outputPipe.fileHandleForReading.close()  // the handler may have closed it at end of file
  }

  convenience init(planPath: String, index: Int, folder: String) throws {
    try self.init(arguments: ["worker", planPath, "\(index)"], configHome: folder)
  }

  /// This helper with `arguments`, its suites under `configHome`.
  init(arguments: [String], configHome: String) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": configHome]) { $1 }
    let pipe = Pipe()
    outputPipe = pipe
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    process.standardInput = input
    let output = output
    pipe.fileHandleForReading.readabilityHandler = { handle in
      let data = handle.availableData
      if data.isEmpty { handle.readabilityHandler = nil }
      output.feed(data)
    }
    let ended = ended
    process.terminationHandler = { _ in
      ended.signal()
      output.changed.signal()
    }
    try process.run()
  }

  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
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
    guard ended.wait(timeout: deadline) == .success else { return false }
    ended.signal()
    return true
  }
}
