import ChildProcess
public import Foundation

/// A Swift block of README.md, read from the README itself, so that a snippet and the test that compiles it cannot
/// drift apart.
public struct ReadmeSnippet: Sendable, CustomStringConvertible {
  /// What a block needs to be compiled, from its first line and its imports.
  public enum Kind: Sendable, Equatable {
    /// A program of its own, on the library and what every toolchain has (Foundation, Observation, Dispatch).
    case program
    /// A program that imports RxSwift or RxCocoa: compiled by the Rx tests, with the trait.
    case rx
    /// A program that imports SwiftUI: compiled where SwiftUI exists (Apple platforms).
    case swiftUI
    /// A `Package.swift` (it begins with `// swift-tools-version`).
    case manifest
  }

  /// The line of README.md the code starts on (after the fence).
  public let line: Int
  /// The block's code; for a continuation, with the block before it in front.
  public let code: String

  /// What the block needs to be compiled.
  public var kind: Kind {
    if code.hasPrefix("// swift-tools-version") { return .manifest }
    let imports = Set(
      code.split(separator: "\n").compactMap { line -> String? in
        let words = line.split(separator: " ")
        return words.count == 2 && words[0] == "import" ? String(words[1]) : nil
      })
    if !imports.isDisjoint(with: ["RxSwift", "RxCocoa"]) { return .rx }
    if imports.contains("SwiftUI") { return .swiftUI }
    return .program
  }

  /// Where the block is, for messages.
  public var description: String { "README.md:\(line)" }

  /// The package's README.md.
  public static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("README.md")

  /// The first line of a block that is compiled after the block before it.
  public static let continuation = "// Continues the block above"

  /// Every ```` ```swift ```` block of README.md, in order: a fence is a line that begins, after white space, with
  /// three backticks; the word after them names the block's language, and a line of backticks alone closes it.
  ///
  /// - Throws: `CocoaError.fileReadCorruptFile` for a block the README never closes (it would check nothing).
  public static func all() throws -> [ReadmeSnippet] {
    let lines = try String(contentsOf: readme, encoding: .utf8).replacingOccurrences(of: "\r\n", with: "\n")
      .components(separatedBy: "\n")
    var snippets: [ReadmeSnippet] = []
    var open: (start: Int, isSwift: Bool)?
    for (index, line) in lines.enumerated() {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      guard trimmed.hasPrefix("```") else { continue }
      let language = trimmed.drop { $0 == "`" }.trimmingCharacters(in: .whitespaces)
      if let block = open {
        guard language.isEmpty else { continue }  // a fence that opens, inside a block: text of the block
        if block.isSwift {
          var code = lines[block.start..<index].joined(separator: "\n") + "\n"
          // A block that goes on from the one before it (a view of the model above) is compiled with it.
          if code.hasPrefix(continuation), let previous = snippets.last { code = previous.code + code }
          snippets.append(ReadmeSnippet(line: block.start + 1, code: code))
        }
        open = nil
      } else {
        open = (index + 1, language.split(separator: " ").first == "swift")
      }
    }
    if let block = open {
      throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: "README.md:\(block.start): unclosed block"])
    }
    return snippets
  }

  /// Type-checks the snippet as a user's `main.swift` would be (top-level code allowed), in the Swift 6 language mode,
  /// against the modules this test run built: what a user gets who pastes it into a program that depends on the
  /// package. Blocking: call it off the cooperative pool.
  ///
  /// - Parameter prelude: Declarations the snippet assumes and does not show (an app's own controls), placed before it.
  /// - Returns: The compiler's exit status and what it printed.
  public func typeCheck(prelude: String = "") throws -> (status: Int32, diagnostics: String) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-snippet-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("main.swift")
    try Data((prelude + code).utf8).write(to: file)
    // Warnings fail it, as they fail the project's own build; the module cache goes to the temporary folder, not
    // ~/.cache.
    var arguments = [
      "-typecheck", "-swift-version", "6", "-warnings-as-errors", "-module-cache-path", Self.moduleCache.path,
      "-I", productsFolder.appendingPathComponent("Modules").path,
    ]
    // SwiftPM hands C targets' module maps to the compiler one by one, never on a search path: RxCocoa imports
    // RxCocoaRuntime (Objective-C, Apple platforms only), and without its map `import RxCocoa` fails with "missing
    // required module". (None on Linux.)
    for map in Self.clangModuleMaps { arguments += ["-Xcc", "-fmodule-map-file=\(map.path)"] }
    #if os(macOS)
      // The package's own minimum, which its modules were built for (the compiler's default is the host's version).
      #if arch(arm64)
        arguments += ["-target", "arm64-apple-macosx15.0"]
      #else
        arguments += ["-target", "x86_64-apple-macosx15.0"]
      #endif
    #endif
    return try run("swiftc", arguments + [file.path])
  }

  /// `<products>/<Target>.build/module.modulemap`: the maps SwiftPM writes for the targets' modules (a C target's; on
  /// Apple platforms a Swift library target's too, for its Objective-C header), which it passes to the compiler
  /// itself as well.
  private static let clangModuleMaps: [URL] = {
    let entries =
      (try? FileManager.default.contentsOfDirectory(at: productsFolder, includingPropertiesForKeys: nil)) ?? []
    return entries.filter { $0.pathExtension == "build" }.map { $0.appendingPathComponent("module.modulemap") }
      .filter { FileManager.default.fileExists(atPath: $0.path) }.sorted { $0.path < $1.path }
  }()

  /// The compiler's module cache for the snippets, shared by a run's type checks.
  private static let moduleCache = FileManager.default.temporaryDirectory.appendingPathComponent(
    "readme-snippets-module-cache")

  /// Parses the snippet as a package's manifest (`swift package dump-package`), in a folder of its own, which also
  /// holds SwiftPM's configuration, caches and lock files for the call (they would otherwise go to the user's folders
  /// and the temporary one).
  public func parseManifest() throws -> (status: Int32, diagnostics: String) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-manifest-\(UUID().uuidString)")
    let package = folder.appendingPathComponent("package")
    try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try Data(code.utf8).write(to: package.appendingPathComponent("Package.swift"))
    return try run(
      "swift", ["package", "--package-path", package.path, "dump-package"],
      environment: ["XDG_CONFIG_HOME": folder.path, "XDG_CACHE_HOME": folder.path, "TMPDIR": folder.path])
  }

  private func run(
    _ tool: String, _ arguments: [String], environment: [String: String] = [:]
  ) throws -> (status: Int32, diagnostics: String) {
    // Both outputs together: the diagnostics.
    let (status, output, error) = try ChildProcess.run(
      executable: "/usr/bin/env", arguments: [tool] + arguments,
      environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    return (status, String(decoding: output + error, as: UTF8.self))
  }
}
