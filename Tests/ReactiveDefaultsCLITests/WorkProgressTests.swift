import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults
@testable import ReactiveDefaultsCLI

/// A long import or export shows its progress on a terminal, one line updated in place, and nothing when standard
/// error is not a terminal.
@Suite(.linuxOnly) struct WorkProgressTests {
  private static let script = "/usr/bin/script"

  private func largePlist(keys: Int) throws -> String {
    let path = NSTemporaryDirectory() + "large-\(UUID().uuidString).plist"
    var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n"
    for index in 0..<keys { text += "\t<key>key\(index)</key>\n\t<string>value \(index)</string>\n" }
    text += "</dict>\n</plist>\n"
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script), "needs script(1) for a terminal"))
  func aLongImportShowsItsProgressOnATerminal() async throws {
    let config = makeConfigFolder()
    let input = try largePlist(keys: 100_000)
    defer { try? FileManager.default.removeItem(atPath: input) }
    let tool = toolsFolder.appendingPathComponent("rdefaults").path
    // script(1) runs the command with a pseudo-terminal as its standard error, and copies what it shows.
    let command = "RDEFAULTS_PROGRESS_AFTER=0 '\(tool)' import d '\(input)'"
    let terminal = try await runTool(["-qec", command, "/dev/null"], config: config, tool: Self.script)
    #expect(terminal.status == 0, "\(terminal.error)")
    let shown = terminal.output
    #expect(shown.contains("\r\u{1B}[K"), "\(shown.debugDescription)")
    let titles = ["Reading the file", "Parsing the file", "Merging the keys", "Sorting the keys", "Writing the keys"]
    #expect(titles.contains { shown.contains("\r\u{1B}[K\($0)") }, "\(shown.debugDescription)")
    #expect(shown.hasSuffix("Imported 100000 keys.\r\n") || shown.hasSuffix("Imported 100000 keys.\n"))

    let plain = try await runTool(["import", "e", input], config: config)
    #expect(plain.status == 0)
    #expect(plain.error.isEmpty, "\(plain.error)")
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script), "needs script(1) for a terminal"))
  func aLongExportShowsItsProgressOnATerminal() async throws {
    let config = makeConfigFolder()
    let input = try largePlist(keys: 100_000)
    let output = NSTemporaryDirectory() + "export-\(UUID().uuidString).plist"
    defer { [input, output].forEach { try? FileManager.default.removeItem(atPath: $0) } }
    #expect(try await runTool(["import", "d", input], config: config).status == 0)
    let tool = toolsFolder.appendingPathComponent("rdefaults").path
    let command = "RDEFAULTS_PROGRESS_AFTER=0 '\(tool)' export d '\(output)'"
    let terminal = try await runTool(["-qec", command, "/dev/null"], config: config, tool: Self.script)
    #expect(terminal.status == 0, "\(terminal.error)")
    let shown = terminal.output
    let titles = ["Reading the file", "Sorting the keys", "Writing the keys", "Writing the file"]
    #expect(titles.contains { shown.contains("\r\u{1B}[K\($0)") }, "\(shown.debugDescription)")
    #expect(shown.hasSuffix("Exported 100000 keys.\r\n") || shown.hasSuffix("Exported 100000 keys.\n"))
    #expect(try DefaultsStore.domain(fromPropertyList: Data(contentsOf: URL(fileURLWithPath: output))).count == 100_000)

    // To standard output on the terminal: the line is cleared before the export, and no last line follows it.
    let toTerminal = try await runTool(
      ["-qec", "RDEFAULTS_PROGRESS_AFTER=0 '\(tool)' export d - | tail -c 9", "/dev/null"], config: config,
      tool: Self.script)
    #expect(toTerminal.output.hasSuffix("</plist>\r\n") || toTerminal.output.hasSuffix("</plist>\n"))
    #expect(!toTerminal.output.contains("Exported"), "\(toTerminal.output.suffix(200).debugDescription)")

    let plain = try await runTool(["export", "d", output], config: config)
    #expect(plain.status == 0)
    #expect(plain.error.isEmpty, "\(plain.error)")
  }

  @Test func theLineGivesTheShareTheRateAndTheTimeLeftWhereAPhaseCounts() {
    #expect(
      WorkProgress.line(.library(.encoding), done: 250_000, of: 1_000_000, seconds: 2)
        == "Writing the keys as XML: 250000 of 1000000 keys (25%), 125000 keys/s, 6 s left")
    #expect(WorkProgress.line(.parsing, done: 0, of: 0, seconds: 3.7) == "Parsing the file… 3 s")
    #expect(WorkProgress.line(.library(.merging), done: 0, of: 10, seconds: 1) == "Merging the keys… 1 s")
  }
}
