import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Starts `count` helpers with the same arguments, waits until each has opened the suite, then lets them all go at
/// once; returns them running.
private func startTogether(_ count: Int, _ arguments: [String], config: String) async throws -> [RunningTool] {
  let children = try (0..<count).map { _ in try RunningTool(arguments, config: config, tool: "rdefaults-test-helper") }
  for child in children { #expect(await child.lines.wait { $0.first == "ready" }) }
  for child in children { child.send("go") }
  return children
}

private func readValue(_ domain: String, _ key: String, config: String) async throws -> String {
  try await runTool(["read", domain, key], config: config).output.trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite(.linuxOnly) struct TransactionProcessTests {
  /// Four processes each add 1 a hundred and fifty times (500 at the full size) to one key with `update`: every update
  /// counts. (With `store[k] = store[k] + 1` and a save after each, the same run ends at about a quarter: three
  /// quarters are lost, at any size.)
  @Test func fourProcessesIncrementingLoseNoUpdate() async throws {
    let config = makeConfigFolder()
    let perProcess = TestSize.pick(150, full: 500)
    let children = try await startTogether(4, ["increment", "counter", "n", "\(perProcess)"], config: config)
    for child in children {
      #expect(await child.exited(timeout: 120))
      #expect(child.lines.lines.last == "done", "\(child.errorLines.lines)")
    }
    #expect(try await readValue("counter", "n", config: config) == "\(4 * perProcess)")
  }

  /// A process killed inside a long edit leaves the suite as it was before the edit, and the lock free: the next
  /// process's edit runs at once.
  @Test func aProcessKilledInsideAnEditLeavesTheSuiteUnchanged() async throws {
    let config = makeConfigFolder()
    try await runTool(["write", "killed", "n", "-int", "10"], config: config)
    let path = config + "/killed.plist"
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    // Killed inside the body: the file is byte for byte as before.
    let first = try RunningTool(["stall", "killed", "n", "99"], config: config, tool: "rdefaults-test-helper")
    #expect(await first.lines.wait { $0 == ["inside"] })
    await first.kill(SIGKILL)
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    // Killed while another process waits for the suite's lock: that one runs once the lock is free.
    let child = try RunningTool(["stall", "killed", "n", "99"], config: config, tool: "rdefaults-test-helper")
    #expect(await child.lines.wait { $0 == ["inside"] })
    // Another process waits for the stalled one's lock (for as long as this test looks): opening the suite takes
    // it too, to check the file.
    let next = try RunningTool(["increment", "killed", "n", "1"], config: config, tool: "rdefaults-test-helper")
    next.send("go")
    #expect(await !next.exited(timeout: 1), "an edit ran while another process's edit held the suite")
    await child.kill(SIGKILL)
    #expect(await next.exited(timeout: 30))
    #expect(next.lines.lines.last == "done")
    #expect(try await readValue("killed", "n", config: config) == "11")
    #expect(!FileManager.default.fileExists(atPath: path + ".journal"))
  }

  /// Two processes migrating at the same moment apply each step once: one applies both, the other none.
  @Test func twoProcessesMigratingAtOnceApplyEachStepOnce() async throws {
    let config = makeConfigFolder()
    try await runTool(["write", "migrated", "old", "kept"], config: config)
    let children = try await startTogether(2, ["migrate", "migrated"], config: config)
    for child in children { #expect(await child.exited(timeout: 60)) }
    let reports = children.compactMap { $0.lines.lines.last }.sorted()
    #expect(reports == ["applied 0", "applied 2"])
    #expect(try await readValue("migrated", "runs", config: config) == "1")
    #expect(try await readValue("migrated", "new", config: config) == "kept")
    let all = try await runTool(["read", "migrated"], config: config).output
    #expect(!all.contains("old ="))
    // The reserved key is shown plainly, as the list of applied steps.
    #expect(
      all.contains("ReactiveDefaults.migrations = (\n        count-runs,\n        \"rename old to new\"\n    );"),
      "\(all)")
  }
}
