import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a bash script with the tool's folder first in `PATH` and the given preferences folder, for what `Process`
/// cannot pass (arguments that are not UTF-8) and for the completion script.
private func runBash(_ script: String, config: String) async throws -> ProcessResult {
  let tool = toolsFolder.appendingPathComponent("rdefaults").path
  return try await runTool(["-c", "tool=\(tool)\n" + script], config: config, tool: "/bin/bash")
}

/// The names of the files in a folder.
private func files(in folder: String) -> [String] {
  ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

/// A binary property list of one dictionary `blob0`… of `count` data values of `size` bytes, written byte by byte:
/// bridging that much data through `PropertyListSerialization` takes seconds of CPU in a debug build.
private func binaryPlistOfBlobs(count: Int, size: Int) -> Data {
  precondition(count >= 15 && count < 128 && size < 1 << 31)
  var bytes = Array("bplist00".utf8)
  var offsets: [Int] = []
  // Object 0: the dictionary; 1...count: the keys; count+1...2×count: the values. References are one byte.
  offsets.append(bytes.count)
  bytes += [0xDF, 0x10, UInt8(count)] + (1...count).map(UInt8.init) + ((count + 1)...(2 * count)).map(UInt8.init)
  for index in 0..<count {
    offsets.append(bytes.count)
    let name = Array("blob\(index)".utf8)
    bytes += [0x50 | UInt8(name.count)] + name
  }
  let blob = [UInt8](repeating: 0x5A, count: size)
  for _ in 0..<count {
    offsets.append(bytes.count)
    bytes += [0x4F, 0x12] + withUnsafeBytes(of: UInt32(size).bigEndian, Array.init)
    bytes += blob
  }
  let table = bytes.count
  for offset in offsets { bytes += withUnsafeBytes(of: UInt32(offset).bigEndian, Array.init) }
  bytes += [0, 0, 0, 0, 0, 0, 4, 1]
  bytes += withUnsafeBytes(of: UInt64(offsets.count).bigEndian, Array.init)
  bytes += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
  bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
  return Data(bytes)
}

@Suite(.linuxOnly) struct ToolSafetyTests {
  let config = makeConfigFolder()

  // MARK: Arguments

  /// `-h` is help only as a command's first argument; anywhere else it is a key or a value.
  @Test func helpIsOnlyACommandsFirstArgument() async throws {
    let help = try await runTool(["help", "write"], config: config)
    #expect(help.status == 0)
    #expect(try await runTool(["write", "-h"], config: config).output == help.output)
    #expect(try await runTool(["write", "--help"], config: config).output == help.output)
    let asValue = try await runTool(["write", "d", "k", "-h"], config: config)
    #expect(asValue.status == 64)
    #expect(asValue.error.contains("unknown type '-h'"), "\(asValue.error)")
    #expect(files(in: config).isEmpty, "a refused write wrote something")
    #expect(try await runTool(["write", "d", "tags", "-array", "a", "-h", "b"], config: config).status == 0)
    #expect(try await runTool(["read", "d", "tags"], config: config).output == "(\n    a,\n    -h,\n    b\n)\n")
  }

  @Test func doubleDashEndsTheOptions() async throws {
    #expect(try await runTool(["write", "d", "k", "--", "-h"], config: config).status == 0)
    #expect(try await runTool(["read", "d", "k"], config: config).output == "-h\n")
    #expect(try await runTool(["write", "d", "--", "-key", "v"], config: config).status == 0)
    #expect(try await runTool(["read", "d", "--", "-key"], config: config).output == "v\n")
    #expect(try await runTool(["write", "d", "n", "-string", "--", "-x"], config: config).status == 0)
    #expect(try await runTool(["read", "d", "n"], config: config).output == "-x\n")
  }

  @Test(arguments: [
    (["read", "a", "b", "c"], "unexpected argument 'c'"),
    (["watch", "d", "--jsn"], "unknown option '--jsn'"),
    (["read", "d", "-x"], "unknown option '-x'"),
    (["write", "d", "k", "-int", "many"], "'many' is not an integer"),
    (["write", "d", "k", "a", "b"], "'b' is the second"),
    (["write", "d", "-k", "v"], "'-k' is not a key"),
    (["rename", "d", "a"], "'rename' needs a domain, the old key and the new key"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["help", "write", "extra"], "unexpected argument 'extra'"),
    (["demo", "now"], "unexpected argument 'now'"),
    (["--generate-completion-script", "tcsh"], "unknown shell 'tcsh'"),
  ])
  func usageErrorsNameTheArgument(_ arguments: [String], _ message: String) async throws {
    let result = try await runTool(arguments, config: config)
    #expect(result.status == 64)
    #expect(result.error.contains(message), "\(result.error)")
    #expect(result.error.contains("Hint:"))
  }

  // MARK: Output

  /// A key made to forge a second line, and values with ESC and CR, come out escaped: one line per change.
  @Test func aHostileKeyThroughWatchIsOneLine() async throws {
    try await runTool(["write", "d", "a", "1"], config: config)
    let watcher = try RunningTool(["watch", "d"], config: config)
    #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching d") } })
    try await runTool(["write", "d", "x = 1;\nadmin", "\u{1B}[31mred\r"], config: config)
    try await runTool(["write", "d", "after", "2"], config: config)
    #expect(await watcher.lines.wait { $0.contains("after = 2") })
    #expect(watcher.lines.lines == [#""x = 1;\nadmin" = "\U001b[31mred\r""#, "after = 2"])
    await watcher.kill(SIGTERM)
    let read = try await runTool(["read", "d", "x = 1;\nadmin"], config: config)
    #expect(read.output == #"\U001b[31mred\r"# + "\n")
  }

  /// An unreadable domain is an error, not an empty one.
  @Test func anUnreadableDomainIsAnError() async throws {
    try Data("garbage".utf8).write(to: URL(fileURLWithPath: config + "/bad.plist"))
    for arguments in [
      ["read", "bad"], ["read", "bad", "k"], ["read-type", "bad", "k"], ["export", "bad", "-"], ["read"],
    ] {
      let result = try await runTool(arguments, config: config)
      #expect(result.status == 1, "\(arguments)")
      #expect(result.error.hasPrefix("Error: The preferences file"), "\(arguments): \(result.error)")
    }
  }

  // MARK: Domain names

  @Test(arguments: [
    ".", ".hidden", "-x", "a*b", "a?b", "a[b]", " ", " lead", "trail ", "a\u{1B}b", "a\u{85}b", "..", "a/b",
  ])
  func invalidDomainNamesAreRefused(_ name: String) async throws {
    let result = try await runTool(["write", "--", name, "k", "v"], config: config)
    #expect(result.status == 64)
    #expect(result.error.contains("invalid domain name"), "\(result.error)")
    #expect(files(in: config).isEmpty)
  }

  @Test func argumentsThatAreNotUTF8AreRefused() async throws {
    let result = try await runBash(#""$tool" write $'dom\xff' k v"#, config: config)
    #expect(result.status == 64)
    #expect(result.error.contains(#"$'dom\xff', is not valid UTF-8"#), "\(result.error)")
    #expect(files(in: config).isEmpty)
  }

  /// Files that cannot be domains are not listed as domains, but named on standard error, escaped.
  @Test func filesThatCannotBeDomainsAreNamedEscaped() async throws {
    try await runTool(["write", "good", "k", "v"], config: config)
    let made = try await runBash(
      "touch \"$XDG_CONFIG_HOME\"/$'raw\\xff.plist' \"$XDG_CONFIG_HOME/a*b.plist\"", config: config)
    #expect(made.status == 0, "\(made.error)")
    let result = try await runTool(["domains"], config: config)
    #expect(result.status == 0)
    #expect(result.output == "good\n")
    #expect(result.error.contains(#"raw\xff.plist"#), "\(result.error)")
    #expect(result.error.contains("a*b.plist"))
    #expect(result.error.contains("mv $'"))
  }

  /// Reading, listing, watching or deleting a domain that does not exist creates no file.
  @Test func aMissingDomainLeavesNoFile() async throws {
    for arguments in [
      ["read", "nope"], ["read", "nope", "k"], ["read-type", "nope", "k"], ["export", "nope", "-"], ["delete", "nope"],
      ["rename", "nope", "a", "b"], ["find", "x"], ["domains"], ["read"],
    ] {
      _ = try await runTool(arguments, config: config)
      #expect(files(in: config).isEmpty, "\(arguments) left \(files(in: config))")
    }
    let watcher = try RunningTool(["watch", "nope"], config: config)
    #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching nope") } })
    await watcher.kill(SIGTERM)
    #expect(files(in: config).isEmpty, "watch left \(files(in: config))")
  }

  // MARK: URLs, types, rename, find

  @Test func urlsReadAsURLs() async throws {
    let url = "https://a.b/c?d#e"
    #expect(try await runTool(["write", "d", "u", "-url", url], config: config).status == 0)
    #expect(try await runTool(["read", "d", "u"], config: config).output == url + "\n")
    #expect(try await runTool(["read", "d"], config: config).output == "{\n    u = \"\(url)\";\n}\n")
    #expect(try await runTool(["read-type", "d", "u"], config: config).output == "Type is url\n")
    let watcher = try RunningTool(["watch", "d", "u", "--json"], config: config)
    #expect(await watcher.errorLines.wait { !$0.isEmpty })
    try await runTool(["write", "d", "u", "-url", "https://x.y/"], config: config)
    #expect(
      await watcher.lines.wait { $0.contains(#"{"key":"u","value":"https:\/\/x.y\/"}"#) }, "\(watcher.lines.lines)")
    await watcher.kill(SIGTERM)
  }

  @Test(arguments: [
    (["s"], "string"), (["-int", "1"], "integer"), (["-float", "1.5"], "float"), (["-bool", "YES"], "boolean"),
    (["-date", "2025-01-31T12:00:00Z"], "date"), (["-data", "00"], "data"), (["-url", "/tmp/x"], "url"),
    (["-array", "a"], "array"), (["-dict", "k", "v"], "dictionary"),
  ])
  func readTypeNamesTheType(_ value: [String], _ type: String) async throws {
    #expect(try await runTool(["write", "d", "k"] + value, config: config).status == 0)
    #expect(try await runTool(["read-type", "d", "k"], config: config).output == "Type is \(type)\n")
  }

  @Test func renameMovesTheValue() async throws {
    try await runTool(["write", "d", "old", "-int", "5"], config: config)
    try await runTool(["write", "d", "new", "stale"], config: config)
    #expect(try await runTool(["rename", "d", "old", "new"], config: config).status == 0)
    #expect(try await runTool(["read", "d"], config: config).output == "{\n    new = 5;\n}\n")
    let missing = try await runTool(["rename", "d", "old", "other"], config: config)
    #expect(missing.status == 1)
    #expect(missing.error.contains("key 'old' does not exist"))
  }

  @Test func findPrintsTheMatchingKeysOfEachDomain() async throws {
    try await runTool(["write", "one", "colour", "Red"], config: config)
    try await runTool(["write", "one", "size", "-int", "3"], config: config)
    try await runTool(["write", "two", "list", "-array", "x", "reddish"], config: config)
    try await runTool(["write", "two", "other", "blue"], config: config)
    let found = try await runTool(["find", "red"], config: config)
    #expect(found.status == 0)
    #expect(
      found.output == "Found 1 key in domain 'one': {\n    colour = Red;\n}\n"
        + "Found 1 key in domain 'two': {\n    list = (\n        x,\n        reddish\n    );\n}\n")
    let none = try await runTool(["find", "zzz"], config: config)
    #expect(none.output.isEmpty)
    #expect(none.error.contains("No domain, key or value contains 'zzz'"))
  }

  // MARK: Import

  /// An import is one atomic save: killed at the moment its journal is written, the domain has none of the keys
  /// or all of them, never some; and a file that is refused changes nothing.
  @Test func anImportIsAllOrNothing() async throws {
    try await runTool(["write", "dom", "kept", "1"], config: config)
    let count = 200_000
    let source = config + "/../import-\(UUID().uuidString).plist"
    defer { try? FileManager.default.removeItem(atPath: source) }
    // Written as text: encoding 200,000 entries through PropertyListSerialization takes seconds of CPU in a debug
    // build, on the threads every test's tasks share.
    var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n"
    for index in 0..<count { xml += "<key>key\(index)</key><integer>\(index)</integer>\n" }
    xml += "</dict>\n</plist>\n"
    try Data(xml.utf8).write(to: URL(fileURLWithPath: source))
    let watch = try #require(ModificationWatch(folder: config, names: ["dom.plist.journal"]))
    let importer = try RunningTool(["import", "dom", source], config: config)
    _ = try await offThePool { watch.wait(timeout: 60) }
    await importer.kill(SIGKILL)
    let keys =
      try await runTool(["export", "dom", "-"], config: config).output.components(separatedBy: "<key>").count - 1
    #expect(keys == 1 || keys == count + 1, "a killed import left \(keys) keys")
    // Whole, then: every key.
    #expect(try await runTool(["import", "dom", source], config: config).status == 0)
    #expect(try await runTool(["read", "dom", "key199999"], config: config).output == "199999\n")
    // Refused: not a plist.
    try Data("not a plist".utf8).write(to: URL(fileURLWithPath: source))
    let before = try Data(contentsOf: URL(fileURLWithPath: config + "/dom.plist"))
    #expect(try await runTool(["import", "dom", source], config: config).status == 1)
    #expect(try Data(contentsOf: URL(fileURLWithPath: config + "/dom.plist")) == before)
  }

  /// A failed write of the output (a full disk) is a failure with an error, not a crash.
  @Test func anOutputThatCannotBeWrittenIsAFailure() async throws {
    let result = try await runBash(#""$tool" help > /dev/full"#, config: config)
    #expect(result.status == 1)
    #expect(result.error.hasPrefix("Error: cannot write the output: No space left on device."), "\(result.error)")
  }

  /// An export through a symbolic link writes the link's target and leaves the link.
  @Test func anExportWritesThroughASymbolicLink() async throws {
    try await runTool(["write", "d", "k", "v"], config: config)
    let target = config + "/../export-target-\(UUID().uuidString).plist"
    defer { try? FileManager.default.removeItem(atPath: target) }
    try #require(symlink(target, config + "/link") == 0)
    #expect(try await runTool(["export", "d", config + "/link"], config: config).status == 0)
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: config + "/link") == target)
    #expect(FileManager.default.contents(atPath: target)?.isEmpty == false)
  }

  /// `watch` prints one line per change, collections included, and a stored NaN is not a change each time.
  @Test func watchPrintsCollectionsOnOneLine() async throws {
    try await runTool(["write", "d", "n", "-float", "nan"], config: config)
    let watcher = try RunningTool(["watch", "d"], config: config)
    #expect(await watcher.errorLines.wait { !$0.isEmpty })
    try await runTool(["write", "d", "arr", "-array", "\u{1B}", "2"], config: config)
    try await runTool(["write", "d", "dict", "-dict", "k", "v w"], config: config)
    #expect(await watcher.lines.wait { $0.count >= 2 })
    #expect(watcher.lines.lines == [#"arr = ("\U001b", 2)"#, #"dict = {k = "v w"; }"#], "\(watcher.lines.lines)")
    await watcher.kill(SIGTERM)
  }

  /// An import whose result would exceed the size limit is refused whole: the library could not read it back.
  @Test func anImportTooLargeForTheDomainIsRefused() async throws {
    try await runTool(["write", "dom", "keep", "1"], config: config)
    let source = config + "/../big-\(UUID().uuidString).plist"
    defer { try? FileManager.default.removeItem(atPath: source) }
    // 50 MiB of binary plist (data values): more than 64 MiB as the XML (base64) the suite file holds.
    try binaryPlistOfBlobs(count: 50, size: 1 << 20).write(to: URL(fileURLWithPath: source))
    let before = try Data(contentsOf: URL(fileURLWithPath: config + "/dom.plist"))
    let result = try await runTool(["import", "dom", source], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("more than the 64 MiB"), "\(result.error)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: config + "/dom.plist")) == before)
    #expect(try await runTool(["read", "dom", "keep"], config: config).output == "1\n")
  }

  // MARK: Completions

  /// The bash script, sourced in bash: commands, `write`'s types, domain names and files complete.
  @Test func bashCompletesCommandsTypesAndDomains() async throws {
    try await runTool(["write", "alpha", "k", "v"], config: config)
    try await runTool(["write", "beta", "k", "v"], config: config)
    func complete(_ words: String, _ index: Int) async throws -> [String] {
      let result = try await runBash(
        """
        source <("$tool" --generate-completion-script bash) || exit 3
        COMP_WORDS=("$tool" \(words)); COMP_CWORD=\(index)
        _rdefaults
        printf '%s\\n' "${COMPREPLY[@]}"
        """, config: config)
      #expect(result.status == 0, "\(result.error)")
      return result.output.split(separator: "\n").map(String.init).sorted()
    }
    #expect(try await complete("re", 1) == ["read", "read-type", "rename"])
    #expect(try await complete("read ''", 2) == ["alpha", "beta"])
    #expect(try await complete("write alpha k -in", 4) == ["-int", "-integer"])
    #expect(try await complete("watch alpha --j", 3) == ["--json"])
    #expect(try await complete("help wa", 2) == ["watch"])
    #expect(try await complete("--generate-completion-script z", 2) == ["zsh"])
    // A domain name is offered quoted, never expanded or run.
    try await runTool(["write", "--", "$(touch PWNED)", "k", "v"], config: config)
    #expect(try await complete("read '$'", 2) == [#"\$\(touch\ PWNED\)"#])
    #expect(!FileManager.default.fileExists(atPath: config + "/PWNED"))
  }
}
