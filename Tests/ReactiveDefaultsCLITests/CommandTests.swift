import Foundation
import Testing

@Suite struct CommandTests {
  let config = makeConfigFolder()

  @Test func writeThenReadPrintsPlainValues() throws {
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
      let write = try runTool(["write", "dom", "key\(index)"] + value, config: config)
      #expect(write.status == 0, "\(value): \(write.error)")
      let read = try runTool(["read", "dom", "key\(index)"], config: config)
      #expect(read.status == 0)
      #expect(read.output == expected + "\n", "\(value)")
    }
  }

  @Test func urlsAreStoredSoFoundationReadsThemBack() throws {
    try runTool(["write", "dom", "u", "-url", "https://user@example.com:8080/a%20b?q#f"], config: config)
    let export = try runTool(["export", "dom", "-"], config: config)
    let root = try PropertyListSerialization.propertyList(from: Data(export.output.utf8), format: nil)
    let archive = try #require((root as? [String: Any])?["u"] as? Data)
    let url = try NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive)
    #expect((url as URL?)?.absoluteString == "https://user@example.com:8080/a%20b?q#f")
  }

  @Test func readingADomainPrintsAListing() throws {
    try runTool(["write", "dom", "name", "hello"], config: config)
    try runTool(["write", "dom", "count", "-int", "3"], config: config)
    let read = try runTool(["read", "dom"], config: config)
    #expect(read.output == "{\n    count = 3;\n    name = hello;\n}\n")
    let all = try runTool(["read"], config: config)
    #expect(all.output.hasPrefix("dom = {"))
    let domains = try runTool(["domains"], config: config)
    #expect(domains.output == "dom\n")
  }

  @Test func missingKeysAndDomainsFailWithExitOne() throws {
    let domain = try runTool(["read", "nothing"], config: config)
    #expect(domain.status == 1)
    #expect(domain.error.hasPrefix("Error: domain 'nothing' does not exist."))
    try runTool(["write", "dom", "a", "1"], config: config)
    let key = try runTool(["read", "dom", "b"], config: config)
    #expect(key.status == 1)
    #expect(key.error.contains("Error: key 'b' does not exist"))
    #expect(key.error.contains("Hint:"))
    #expect(key.output.isEmpty)
    #expect(try runTool(["delete", "dom", "b"], config: config).status == 1)
  }

  @Test(arguments: [
    ["read", "../x"], ["write", "a/b", "k", "v"], ["read", ""], ["bogus"], ["write", "dom", "k"],
    ["write", "dom", "k", "-int", "many"], ["write", "dom", "k", "-dict", "odd"], ["read", "a", "b", "c"],
    ["write", "dom", "k", "-unknown", "v"], ["watch"], ["export", "dom"], ["help", "nope"], ["domains", "x"],
  ])
  func usageErrorsExitSixtyFour(_ arguments: [String]) throws {
    let result = try runTool(arguments, config: config)
    #expect(result.status == 64)
    #expect(result.error.hasPrefix("Error: "))
    #expect(result.error.contains("Hint:"))
  }

  @Test func helpAndVersion() throws {
    #expect(try runTool(["--version"], config: config).output == "rdefaults 0.1.0\n")
    let help = try runTool(["--help"], config: config)
    #expect(help.status == 0)
    #expect(help.output.contains("watch DOMAIN"))
    #expect(try runTool([], config: config).output == help.output)
    let writeHelp = try runTool(["help", "write"], config: config)
    #expect(writeHelp.output.contains("-array"))
    #expect(try runTool(["write", "--help"], config: config).output == writeHelp.output)
  }

  @Test func deleteRemovesAKeyThenTheDomain() throws {
    try runTool(["write", "dom", "a", "1"], config: config)
    try runTool(["write", "dom", "b", "2"], config: config)
    #expect(try runTool(["delete", "dom", "a"], config: config).status == 0)
    #expect(try runTool(["read", "dom"], config: config).output == "{\n    b = 2;\n}\n")
    #expect(try runTool(["delete", "dom"], config: config).status == 0)
    #expect(!FileManager.default.fileExists(atPath: config + "/dom.plist"))
    #expect(try runTool(["domains"], config: config).output.isEmpty)
  }

  @Test func exportThenImportRoundTrips() throws {
    try runTool(["write", "src", "a", "-int", "1"], config: config)
    try runTool(["write", "src", "b", "-array", "x", "y"], config: config)
    let file = config + "/exported.plist.xml"
    #expect(try runTool(["export", "src", file], config: config).status == 0)
    #expect(try runTool(["import", "dst", file], config: config).status == 0)
    #expect(
      try runTool(["read", "dst"], config: config).output == runTool(["read", "src"], config: config).output)
    let viaStdin = try runTool(
      ["import", "dst2", "-"], config: config, input: try String(contentsOfFile: file, encoding: .utf8))
    #expect(viaStdin.status == 0)
    #expect(try runTool(["read", "dst2", "a"], config: config).output == "1\n")
  }

  @Test func importRefusesWhatIsNotADictionaryPlist() throws {
    let file = config + "/bad.txt"
    try Data("not a plist".utf8).write(to: URL(fileURLWithPath: file))
    let result = try runTool(["import", "dom", file], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("not a property list"))
    #expect(try runTool(["import", "dom", config + "/missing"], config: config).status == 1)
  }

  @Test func watchPrintsChangesMadeByAnotherProcess() throws {
    try runTool(["write", "dom", "k", "-int", "1"], config: config)
    let watcher = try RunningTool(["watch", "dom", "k", "--json"], config: config)
    #expect(watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching dom") } })
    try runTool(["write", "dom", "k", "-int", "2"], config: config)
    #expect(watcher.lines.wait { $0.contains(#"{"key":"k","value":2}"#) })
    try runTool(["delete", "dom", "k"], config: config)
    #expect(watcher.lines.wait { $0.contains(#"{"key":"k","value":null}"#) })
    watcher.kill(SIGTERM)
    #expect(watcher.process.terminationStatus == 0)
  }

  @Test func watchWithoutKeysPrintsEveryChangedKey() throws {
    try runTool(["write", "dom", "a", "1"], config: config)
    let watcher = try RunningTool(["watch", "dom"], config: config)
    #expect(watcher.errorLines.wait { !$0.isEmpty })
    try runTool(["write", "dom", "b", "-int", "7"], config: config)
    #expect(watcher.lines.wait { $0.contains("b = 7") })
    #expect(!watcher.lines.lines.contains { $0.hasPrefix("a") })
    watcher.kill(SIGINT)
    #expect(watcher.process.terminationStatus == 0)
  }

  @Test func demoRunsAndCleansUp() throws {
    let result = try runTool(["demo"], config: config)
    #expect(result.status == 0, "\(result.error)")
    #expect(result.output.contains("observer: volume = 0.42"))
    #expect(try runTool(["domains"], config: config).output.isEmpty)
  }
}
