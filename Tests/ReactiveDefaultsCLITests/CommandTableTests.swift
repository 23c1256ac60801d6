import Foundation
import Testing

@testable import ReactiveDefaultsCLI

/// The help, the README's command table and the DocC article's are all the command table's: none may disagree.
@Suite struct CommandTableTests {
  private var root: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  }

  /// The rows of the first Markdown table whose header starts with `| command |`.
  private func commandRows(of path: String) throws -> [String] {
    let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let header = lines.firstIndex(where: { $0.hasPrefix("| command |") }) else { return [] }
    return Array(lines[(header + 2)...].prefix { $0.hasPrefix("|") })
  }

  @Test(arguments: ["README.md", "Sources/ReactiveDefaults/ReactiveDefaults.docc/CommandLineTool.md"])
  func tablesAreTheCommandTable(_ path: String) throws {
    let rows = try commandRows(of: path)
    #expect(rows == Help.markdownRows, "expected in \(path):\n\(Help.markdownRows.joined(separator: "\n"))")
  }

  @Test func theOverviewListsEveryCommandAndEachPageItsSynopsis() {
    // A terminal's width: no line of the overview runs past 100 columns.
    #expect(Help.overview.split(separator: "\n").allSatisfy { $0.count <= 100 }, "\(Help.overview)")
    for command in Help.commands {
      #expect(Help.overview.contains("  \(command.name) "), "\(command.name)")
      #expect(command.helpPage.hasPrefix("Usage: \(command.synopsis)\n"))
      #expect(Help.synopsis(of: command.name) == command.synopsis)
    }
    // Every spelling of every type is documented in `write`'s page, and the synopsis lists the main ones.
    let write = Help.command(named: "write")!
    for flag in Help.allTypeFlags { #expect(write.helpPage.contains(flag), "\(flag)") }
    for type in Help.typeFlags { #expect(write.synopsis.contains(type.flag)) }
  }

  @Test func completionScriptsNameEveryCommandAndType() {
    for shell in ["bash", "zsh", "fish"] {
      let script = Completions.script(for: shell) ?? ""
      for command in Help.commands { #expect(script.contains(command.name), "\(shell): \(command.name)") }
      for flag in Help.allTypeFlags { #expect(script.contains(flag), "\(shell): \(flag)") }
    }
    #expect(Completions.script(for: "tcsh") == nil)
  }
}
