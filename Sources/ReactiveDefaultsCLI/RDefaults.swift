import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `rdefaults` command: macOS `defaults` for the plist domains Foundation keeps on Linux, plus live
/// `watch`. The executable calls ``run(_:)``; everything here is testable without a process.
public enum RDefaults {
  /// The tool's version.
  public static let version = "0.1.0"

  /// Exit statuses: 0 success, 64 usage error (`EX_USAGE`), 1 failure.
  public enum ExitCode: Int32, Sendable {
    /// The command did what it was asked.
    case success = 0
    /// The command failed (a missing key or domain, an unreadable file).
    case failure = 1
    /// The command line was wrong.
    case usage = 64
  }

  struct Failure: Error {
    var message: String
    var hint: String?
    var code: ExitCode
  }

  /// Runs one command line (without the program name) and returns its exit status.
  ///
  /// - Parameter arguments: The arguments, such as `["read", "group.app", "volume"]`.
  /// - Returns: The exit status.
  public static func run(_ arguments: [String]) -> ExitCode {
    do {
      try dispatch(arguments)
      return .success
    } catch let failure as Failure {
      printError("Error: \(failure.message)")
      if let hint = failure.hint { printError("Hint: \(hint)") }
      return failure.code
    } catch {
      printError("Error: \(error)")
      return .failure
    }
  }

  private static func dispatch(_ arguments: [String]) throws {
    guard let command = arguments.first else {
      printOut(Help.overview)
      return
    }
    let rest = Array(arguments.dropFirst())
    if rest.contains("-h") || rest.contains("--help") {
      guard let text = Help.commands[command] else { throw unknownCommand(command) }
      return printOut(text)
    }
    switch command {
    case "-h", "--help": printOut(Help.overview)
    case "--version", "version": printOut("rdefaults \(version)")
    case "help":
      guard let topic = rest.first else { return printOut(Help.overview) }
      guard let text = Help.commands[topic] else { throw unknownCommand(topic) }
      printOut(text)
    case "domains": try Commands.domains(rest)
    case "read": try Commands.read(rest)
    case "write": try Commands.write(rest)
    case "delete": try Commands.delete(rest)
    case "watch": try Commands.watch(rest)
    case "export": try Commands.export(rest)
    case "import": try Commands.import(rest)
    case "demo": try Demo.run(rest)
    default: throw unknownCommand(command)
    }
  }

  private static func unknownCommand(_ command: String) -> Failure {
    Failure(
      message: "unknown command '\(command)'.",
      hint: "Run 'rdefaults help' for the list of commands.", code: .usage)
  }

  static func usage(_ message: String, command: String) -> Failure {
    Failure(message: message, hint: "Usage: \(Help.usageLines[command] ?? "rdefaults help")", code: .usage)
  }

  /// Writes a line to standard output at once (unbuffered: `watch` lines must not wait in a buffer).
  static func printOut(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
  }

  static func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
  }
}
