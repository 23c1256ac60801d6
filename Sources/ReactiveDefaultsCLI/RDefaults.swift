import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

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

  /// Runs the process's own command line, refusing arguments that are not valid UTF-8 (Swift's
  /// `CommandLine.arguments` would repair them, so that `dom\xff` and `dom\xfe` named the same domain).
  ///
  /// - Returns: The exit status.
  public static func main() -> ExitCode {
    var arguments: [String] = []
    for index in 1..<Int(CommandLine.argc) {
      guard let pointer = CommandLine.unsafeArgv[index] else { continue }
      guard let argument = String(validatingCString: pointer) else {
        let bytes = Array(UnsafeBufferPointer(start: pointer, count: strlen(pointer))).map { UInt8(bitPattern: $0) }
        printError("Error: argument \(index), $'\(Formatting.escaped(bytes: bytes))', is not valid UTF-8.")
        printError("Hint: Domain names, keys and values are UTF-8 text; rename a file with such a name first.")
        return .usage
      }
      arguments.append(argument)
    }
    return run(arguments)
  }

  /// Runs one command line (without the program name) and returns its exit status.
  ///
  /// - Parameter arguments: The arguments, such as `["read", "group.app", "volume"]`.
  /// - Returns: The exit status.
  public static func run(_ arguments: [String]) -> ExitCode {
    do {
      try dispatch(arguments)
      try checkOutput()
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
    guard let command = arguments.first else { return printOut(Help.overview) }
    let rest = Array(arguments.dropFirst())
    switch command {
    case "-h", "--help", "help":
      guard let topic = rest.first else { return printOut(Help.overview) }
      guard rest.count == 1 else {
        throw usage("unexpected \(Formatting.argument(rest[1])).", command: "help")
      }
      guard let spec = Help.command(named: topic) else { throw unknownCommand(topic) }
      return printOut(spec.helpPage)
    case "--version":
      guard rest.isEmpty else {
        throw usage("unexpected \(Formatting.argument(rest[0])) after --version.", command: "help")
      }
      return printOut("rdefaults \(version)")
    case "--generate-completion-script":
      guard rest.count == 1, let script = Completions.script(for: rest[0]) else {
        throw Failure(
          message: rest.count == 1
            ? "unknown shell '\(Formatting.escaped(rest[0]))': --generate-completion-script knows bash, zsh and fish."
            : "--generate-completion-script needs one shell: bash, zsh or fish.",
          hint: "Usage: rdefaults --generate-completion-script bash|zsh|fish", code: .usage)
      }
      return printOut(script)
    default: break
    }
    guard let spec = Help.command(named: command) else { throw unknownCommand(command) }
    // Help is asked for as the command's first argument only: anywhere else, `-h` may be a key or a value.
    if let first = rest.first, first == "-h" || first == "--help" {
      guard rest.count == 1 else {
        throw usage("unexpected \(Formatting.argument(rest[1])) after \(first).", command: command)
      }
      return printOut(spec.helpPage)
    }
    // `--file PATH` in the DOMAIN's place: the command works on that property-list file.
    if spec.takesFile, rest.first == "--file" {
      guard rest.count >= 2 else { throw usage("--file needs the path of a property-list file.", command: command) }
      return try Commands.$targetFile.withValue(rest[1]) {
        try run(command, [Commands.fileTargetPlaceholder] + rest.dropFirst(2))
      }
    }
    try run(command, rest)
  }

  private static func run(_ command: String, _ rest: [String]) throws {
    switch command {
    case "domains": try Commands.domains(rest)
    case "read": try Commands.read(rest)
    case "read-type": try Commands.readType(rest)
    case "write": try Commands.write(rest)
    case "rename": try Commands.rename(rest)
    case "delete": try Commands.delete(rest)
    case "find": try Commands.find(rest)
    case "watch": try Commands.watch(rest)
    case "export": try Commands.export(rest)
    case "import": try Commands.import(rest)
    case "demo": try Demo.run(rest)
    default: throw unknownCommand(command)
    }
  }

  private static func unknownCommand(_ command: String) -> Failure {
    Failure(
      message: command.isEmpty
        ? "the command name is empty."
        : Words.looksLikeOption(command)
          ? "unknown option '\(Formatting.escaped(command))'." : "unknown command '\(Formatting.escaped(command))'.",
      hint: "Run 'rdefaults help' for the list of commands.", code: .usage)
  }

  static func usage(_ message: String, command: String) -> Failure {
    Failure(message: message, hint: "Usage: \(Help.synopsis(of: command))", code: .usage)
  }

  /// Writes a line to standard output at once (unbuffered: `watch` lines must not wait in a buffer). A failed
  /// write (a full disk, a closed descriptor) makes the command fail once it is done.
  static func printOut(_ text: String) {
    writeAll(Data((text + "\n").utf8), to: STDOUT_FILENO)
  }

  static func printError(_ text: String) {
    writeAll(Data((text + "\n").utf8), to: STDERR_FILENO)
  }

  /// The first failed write to standard output, if any (`errno`).
  private static let outputFailure = Mutex<Int32?>(nil)

  /// Writes all of `data` with `write(2)`, retrying short writes. `FileHandle.write` stops the process on a failed
  /// write; a tool must report it instead.
  static func writeAll(_ data: Data, to descriptor: Int32) {
    if let failed = writeBytes(data, to: descriptor), descriptor == STDOUT_FILENO {
      outputFailure.withLock { $0 = $0 ?? failed }
    }
  }

  /// Writes all of `data`; returns `errno` when a write failed.
  static func writeBytes(_ data: Data, to descriptor: Int32) -> Int32? {
    data.withUnsafeBytes { buffer -> Int32? in
      var offset = 0
      while offset < buffer.count {
        let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return errno
        }
        offset += written
      }
      return nil
    }
  }

  /// Fails the command if its output could not be written.
  static func checkOutput() throws {
    guard let failure = outputFailure.withLock({ $0 }) else { return }
    throw Failure(
      message: "cannot write the output: \(String(cString: strerror(failure))).",
      hint: "Check where standard output goes (a full disk, a closed pipe).", code: .failure)
  }
}
