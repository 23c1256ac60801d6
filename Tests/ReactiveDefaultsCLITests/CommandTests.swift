import ChildProcess
import Foundation
import TestSupport
import Testing

@Suite(.linuxOnly) struct CommandTests {
  let config = makeConfigFolder()

  @Test func writeThenReadPrintsPlainValues() async throws {
    let cases: [([String], String)] = [
      (["hello world"], "hello world"),
      (["-string", "-x"], "-x"),
      (["-int", "42"], "42"),
      (["-float", "2.5"], "2.5"),
      (["-bool", "YES"], "1"),
      (["-bool", "false"], "0"),
      (["-date", "2025-01-31T12:00:00Z"], "2025-01-31 12:00:00 +0000"),
      (["-data", "00ff10"], "<00ff10>"),
      (["-array", "a", "b c"], "(\n    a,\n    \"b c\"\n)"),
      (["-dict", "k", "v"], "{\n    k = v;\n}"),
    ]
    for (index, (value, expected)) in cases.enumerated() {
      let write = try await runTool(["write", "dom", "key\(index)"] + value, config: config)
      #expect(write.status == 0, "\(value): \(write.error)")
      let read = try await runTool(["read", "dom", "key\(index)"], config: config)
      #expect(read.status == 0)
      #expect(read.output == expected + "\n", "\(value)")
    }
  }

  @Test func urlsAreStoredSoFoundationReadsThemBack() async throws {
    try await runTool(["write", "dom", "u", "-url", "https://user@example.com:8080/a%20b?q#f"], config: config)
    let export = try await runTool(["export", "dom", "-"], config: config)
    let root = try PropertyListSerialization.propertyList(from: Data(export.output.utf8), format: nil)
    let archive = try #require((root as? [String: Any])?["u"] as? Data)
    let url = try NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive)
    #expect((url as URL?)?.absoluteString == "https://user@example.com:8080/a%20b?q#f")
  }

  @Test func readingADomainPrintsAListing() async throws {
    try await runTool(["write", "dom", "name", "hello"], config: config)
    try await runTool(["write", "dom", "count", "-int", "3"], config: config)
    let read = try await runTool(["read", "dom"], config: config)
    #expect(read.output == "{\n    count = 3;\n    name = hello;\n}\n")
    let all = try await runTool(["read"], config: config)
    #expect(all.output.hasPrefix("dom = {"))
    let domains = try await runTool(["domains"], config: config)
    #expect(domains.output == "dom\n")
  }

  @Test func missingKeysAndDomainsFailWithExitOne() async throws {
    let domain = try await runTool(["read", "nothing"], config: config)
    #expect(domain.status == 1)
    #expect(domain.error.hasPrefix("Error: domain 'nothing' does not exist."))
    try await runTool(["write", "dom", "a", "1"], config: config)
    let key = try await runTool(["read", "dom", "b"], config: config)
    #expect(key.status == 1)
    #expect(key.error.contains("Error: key 'b' does not exist"))
    #expect(key.error.contains("Hint:"))
    #expect(key.output.isEmpty)
    #expect(try await runTool(["delete", "dom", "b"], config: config).status == 1)
  }

  @Test(arguments: [
    ["read", "../x"], ["write", "a/b", "k", "v"], ["read", ""], ["bogus"], ["write", "dom", "k"],
    ["write", "dom", "k", "-int", "many"], ["write", "dom", "k", "-dict", "odd"], ["read", "a", "b", "c"],
    ["write", "dom", "k", "-unknown", "v"], ["watch"], ["export", "dom"], ["help", "nope"], ["domains", "x"],
    // Issue 48: stored as `inf`, and the last duplicate kept, silently.
    ["write", "dom", "k", "-float", "1e400"], ["write", "dom", "k", "-float", "-1e400"],
    ["write", "dom", "k", "-float", "1e-400"],
    ["write", "dom", "k", "-dict", "a", "1", "a", "2"],
  ])
  func usageErrorsExitSixtyFour(_ arguments: [String]) async throws {
    let result = try await runTool(arguments, config: config)
    #expect(result.status == 64)
    #expect(result.error.hasPrefix("Error: "))
    #expect(result.error.contains("Hint:"))
  }

  @Test func helpAndVersion() async throws {
    #expect(try await runTool(["--version"], config: config).output == "rdefaults 0.1.0\n")
    let help = try await runTool(["--help"], config: config)
    #expect(help.status == 0)
    #expect(help.output.contains("watch DOMAIN"))
    #expect(try await runTool([], config: config).output == help.output)
    let writeHelp = try await runTool(["help", "write"], config: config)
    #expect(writeHelp.output.contains("-array"))
    #expect(try await runTool(["write", "--help"], config: config).output == writeHelp.output)
  }

  @Test func deleteRemovesAKeyThenTheDomain() async throws {
    try await runTool(["write", "dom", "a", "1"], config: config)
    try await runTool(["write", "dom", "b", "2"], config: config)
    #expect(try await runTool(["delete", "dom", "a"], config: config).status == 0)
    #expect(try await runTool(["read", "dom"], config: config).output == "{\n    b = 2;\n}\n")
    #expect(try await runTool(["delete", "dom"], config: config).status == 0)
    #expect(!FileManager.default.fileExists(atPath: config + "/dom.plist"))
    #expect(try await runTool(["domains"], config: config).output.isEmpty)
  }

  @Test func exportThenImportRoundTrips() async throws {
    try await runTool(["write", "src", "a", "-int", "1"], config: config)
    try await runTool(["write", "src", "b", "-array", "x", "y"], config: config)
    let file = config + "/exported.plist.xml"
    #expect(try await runTool(["export", "src", file], config: config).status == 0)
    #expect(try await runTool(["import", "dst", file], config: config).status == 0)
    #expect(
      try await runTool(["read", "dst"], config: config).output == runTool(["read", "src"], config: config).output)
    let viaStdin = try await runTool(
      ["import", "dst2", "-"], config: config, input: try String(contentsOfFile: file, encoding: .utf8))
    #expect(viaStdin.status == 0)
    #expect(try await runTool(["read", "dst2", "a"], config: config).output == "1\n")
  }

  @Test func importRefusesWhatIsNotADictionaryPlist() async throws {
    let file = config + "/bad.txt"
    try Data("not a plist".utf8).write(to: URL(fileURLWithPath: file))
    let result = try await runTool(["import", "dom", file], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("not a property list"))
    #expect(try await runTool(["import", "dom", config + "/missing"], config: config).status == 1)
  }

  @Test func watchPrintsChangesMadeByAnotherProcess() async throws {
    try await runTool(["write", "dom", "k", "-int", "1"], config: config)
    let watcher = try RunningTool(["watch", "dom", "k", "--json"], config: config)
    #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching dom") } })
    try await runTool(["write", "dom", "k", "-int", "2"], config: config)
    #expect(await watcher.lines.wait { $0.contains(#"{"key":"k","value":2}"#) })
    try await runTool(["delete", "dom", "k"], config: config)
    #expect(await watcher.lines.wait { $0.contains(#"{"key":"k","value":null}"#) })
    await watcher.kill(SIGTERM)
    #expect(watcher.process.terminationStatus == 0)
  }

  @Test func watchWithoutKeysPrintsEveryChangedKey() async throws {
    try await runTool(["write", "dom", "a", "1"], config: config)
    let watcher = try RunningTool(["watch", "dom"], config: config)
    #expect(await watcher.errorLines.wait { !$0.isEmpty })
    try await runTool(["write", "dom", "b", "-int", "7"], config: config)
    #expect(await watcher.lines.wait { $0.contains("b = 7") })
    #expect(!watcher.lines.lines.contains { $0.hasPrefix("a") })
    await watcher.kill(SIGINT)
    #expect(watcher.process.terminationStatus == 0)
  }

  @Test func demoRunsAndCleansUp() async throws {
    let result = try await runTool(["demo"], config: config)
    #expect(result.status == 0, "\(result.error)")
    #expect(result.output.contains("observer: volume = 0.42"))
    #expect(try await runTool(["domains"], config: config).output.isEmpty)
    // Nothing of the scratch domain is left: not its plist, its journal, nor its lock file.
    let left = FileManager.default.enumerator(atPath: config)?.compactMap { $0 as? String } ?? []
    #expect(!left.contains { ($0 as NSString).lastPathComponent.hasPrefix("rdefaults-demo-") }, "\(left)")
  }
}
