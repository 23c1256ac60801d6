import ChildProcess
import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A plist of `count` keys `k0`… with the value 0, written the way corelibs writes one.
private func writeLargeSuite(_ path: String, count: Int) throws {
  let entries = Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", 0) })
  try PropertyListSerialization.data(fromPropertyList: entries, format: .xml, options: 0)
    .write(to: URL(fileURLWithPath: path))
}

private func keyCount(ofPlistAt path: String) throws -> Int {
  let root = try PropertyListSerialization.propertyList(
    from: try Data(contentsOf: URL(fileURLWithPath: path)), format: nil)
  return (root as? [String: Any])?.count ?? -1
}

/// `keyCount(ofPlistAt:)` holding the suite's lock (`<file>.lock`), as a reader that uses the library does, on a thread
/// of its own: a churning writer may be rewriting the file in place (as corelibs saves), which a reader without the
/// lock can find empty or cut.
private func lockedKeyCount(ofPlistAt path: String) async throws -> Int {
  try await offThePool {
    let descriptor = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(.EIO) }
    defer { close(descriptor) }
    guard flock(descriptor, LOCK_EX) == 0 else { throw POSIXError(.EIO) }
    return try keyCount(ofPlistAt: path)
  }
}

@Suite(.linuxOnly) struct DurabilityTests {
  /// A writer saving a 20,000-key suite over and over is killed 12 times (50 at the full size): at random moments, and
  /// at the moment the plist (corelibs' in-place rewrite) or the journal starts changing. Every time, the next open
  /// through the library finds every key, and the file then parses (read under the suite's lock, as a reader using the
  /// library reads). Without the journal, a kill timed to corelibs' rewrite leaves an empty or cut file. Standard
  /// size 12: every other round is timed, alternately to the plist's and the journal's first write, so 6 rounds land
  /// where a loss happens; the random rounds cover the rest of the save.
  @Test func killingASaveAtFiftyMomentsLosesNoKey() async throws {
    let config = makeConfigFolder()
    let count = 20_000
    try writeLargeSuite(config + "/big.plist", count: count)
    for round in 0..<TestSize.pick(12, full: 50) {
      let watch = try #require(
        ModificationWatch(folder: config, names: [round % 4 == 2 ? "big.plist.journal" : "big.plist"]))
      let child = try RunningTool(["churn", "big", "\(count)"], config: config, tool: "rdefaults-test-helper")
      // The child opened the suite through the library (completing any journal) and counted its keys.
      #expect(await child.lines.wait { $0.first?.hasPrefix("ready") == true }, "round \(round)")
      let opened = child.lines.lines.first.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
      #expect(opened >= count, "round \(round): the library found \(opened) keys after the previous kill")
      #expect(try await lockedKeyCount(ofPlistAt: config + "/big.plist") >= count, "round \(round)")
      // The child saves from its "go" on; the kill comes from the thread that waits, so it lands at the moment chosen
      // however long this test's task then waits for its turn.
      let timed = round.isMultiple(of: 2)
      let delay = Double.random(in: 0...0.4)
      let changed = try await offThePool {
        child.send("go")
        // Timed: the moment the file (or the journal) is first written to; else a random moment of the saves.
        defer { child.process.signal(SIGKILL) }
        guard timed else {
          _ = DispatchSemaphore(value: 0).wait(timeout: .now() + delay)
          return true
        }
        return watch.wait(timeout: 30)
      }
      #expect(changed, "round \(round): the file never changed")
      await child.kill(SIGKILL)
    }
    let last = try await runTool(["count", "big"], config: config, tool: "rdefaults-test-helper")
    #expect(Int(last.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 > count)
    #expect(try keyCount(ofPlistAt: config + "/big.plist") > count)
  }

  /// A writer that makes plain `UserDefaults` writes in a 20,000-key suite, each followed by an edit, is killed 6 times
  /// (20 at the full size) at the moment the plist starts changing: the edit's first step, corelibs' save of the
  /// plain write, in place, under the suite's lock. Every time, the next open through the library finds every key.
  /// Without the journal kept while corelibs synchronizes outside a save (the file's bytes, put back by the next
  /// open), a kill there left an empty or cut file: every key lost (the history checker's killed plain writers), in 8
  /// kills of 20 (529c549): 6 kills find it with a probability of 1 - 0.6^6, 95 %.
  @Test func killingAnEditThatSavesPlainWritesLosesNoKey() async throws {
    let config = makeConfigFolder()
    let count = 20_000
    try writeLargeSuite(config + "/big.plist", count: count)
    for round in 0..<TestSize.pick(6, full: 20) {
      let watch = try #require(ModificationWatch(folder: config, names: ["big.plist"]))
      let child = try RunningTool(["plainedits", "big", "\(count)"], config: config, tool: "rdefaults-test-helper")
      #expect(await child.lines.wait { $0.first?.hasPrefix("ready") == true }, "round \(round)")
      let opened = child.lines.lines.first.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
      #expect(opened >= count, "round \(round): the library found \(opened) keys after the previous kill")
      let changed = try await offThePool {
        child.send("go")
        defer { child.process.signal(SIGKILL) }
        return watch.wait(timeout: 30)
      }
      #expect(changed, "round \(round): the plist never changed")
      await child.kill(SIGKILL)
    }
    let last = try await runTool(["count", "big"], config: config, tool: "rdefaults-test-helper")
    #expect(Int(last.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= count)
    #expect(try keyCount(ofPlistAt: config + "/big.plist") >= count)
  }

  /// A reader process using the library while another saves a 10,000-key suite over and over (corelibs rewrites the
  /// plist in place during each save): every key it reads is there, at every reload. A reader that loaded the file
  /// outside the suite's lock could find it empty or cut, and then every key absent.
  @Test func aReaderUsingTheLibraryNeverLoadsATornFile() async throws {
    let config = makeConfigFolder()
    let count = 10_000
    try writeLargeSuite(config + "/big.plist", count: count)
    let writer = try RunningTool(["churn", "big", "\(count)"], config: config, tool: "rdefaults-test-helper")
    #expect(await writer.lines.wait { $0.first?.hasPrefix("ready") == true })
    // 15 saves (50 at the full size): each save is a rewrite in place that a lock-free reload would have found torn.
    let saves = TestSize.pick(15, full: 50)
    let reader = try RunningTool(["readloop", "big", "\(saves)"], config: config, tool: "rdefaults-test-helper")
    #expect(await reader.lines.wait { $0.first == "ready" })
    // The writer saves from its "go" on, until the reader is done: killed by the thread that saw the reader end.
    let ended = try await offThePool {
      writer.send("go")
      defer { writer.process.signal(SIGKILL) }
      return reader.process.waitForExit(deadline: .now() + 90 * timeoutScale)
    }
    #expect(ended, "the reader never finished")
    #expect(await reader.lines.wait { $0.count == 2 })
    await writer.kill(SIGKILL)
    let figures = (reader.lines.lines.last ?? "").split(separator: " ").compactMap { Int($0) }
    try #require(figures.count == 3, "\(reader.lines.lines)")
    // The reader stops after its saves or 60 s, whichever comes first: how many saves fit depends on the machine's
    // speed (35 under the thread sanitizer), so only enough of them to matter is required.
    #expect(figures[0] >= 5, "the reader saw \(figures[0]) of the writer's saves")
    #expect(figures[2] == 0, "\(figures[2]) of \(figures[1]) reads found a key absent")
    await reader.kill(SIGKILL)
  }

  /// A save that cannot be written whole (the file size limit, as on a full disk) leaves the file byte for byte as
  /// it was, is reported, and keeps the value pending: once the limit is lifted, the next save writes it.
  @Test func aSaveThatFailsLeavesTheFileAsItWasAndIsTriedAgain() async throws {
    let config = makeConfigFolder()
    let path = config + "/limited.plist"
    let child = try RunningTool(["fsize", "limited"], config: config, tool: "rdefaults-test-helper")
    #expect(await child.lines.wait { $0 == ["saved"] })
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    child.send("go")
    #expect(await child.lines.wait { $0.count == 2 })
    let failure = child.lines.lines.last ?? ""
    #expect(failure.hasPrefix("failed: Could not save \(path)"), "\(failure)")
    #expect(failure.contains("File too large"), "\(failure)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the failed save changed the file")
    #expect(!FileManager.default.fileExists(atPath: path + ".journal"), "a partial journal was left behind")
    child.send("go")
    #expect(await child.lines.wait { $0.last == "saved again" })
    let saved = try await runTool(["read", "limited", "text"], config: config)
    #expect(saved.output == String(repeating: "x", count: 8192) + "\n")
  }

  @Test func aConfigFolderThatIsAFileFailsTheWrite() async throws {
    let file = makeConfigFolder() + "/not-a-folder"
    try Data("x".utf8).write(to: URL(fileURLWithPath: file))
    let result = try await runTool(["write", "d", "k", "v"], config: file)
    #expect(result.status == 1)
    // The tool's own save fails with an error; the background save of the write, when a loaded machine lets its
    // 100 ms pass first, has reported the same failure as a warning before it.
    #expect(result.error.split(separator: "\n").contains { $0.hasPrefix("Error: Could not save") }, "\(result.error)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data("x".utf8))
  }

  @Test func aNameTooLongForTheFileSystemFailsTheWrite() async throws {
    let config = makeConfigFolder()
    let result = try await runTool(["write", String(repeating: "n", count: 300), "k", "v"], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("File name too long"), "\(result.error)")
  }

  @Test func aFolderInPlaceOfThePlistFailsTheWriteAndStays() async throws {
    let config = makeConfigFolder()
    try FileManager.default.createDirectory(atPath: config + "/d.plist", withIntermediateDirectories: true)
    let result = try await runTool(["write", "d", "k", "v"], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("is a folder, not a file"), "\(result.error)")
    var isFolder: ObjCBool = false
    #expect(FileManager.default.fileExists(atPath: config + "/d.plist", isDirectory: &isFolder) && isFolder.boolValue)
  }

  /// Opening a FIFO blocks until a writer opens it: corelibs would hang reading one. The tool neither hangs nor
  /// renames it (it is no file of the tool's): it says what stands there and exits 1; once it is gone, the domain
  /// works again.
  @Test func aFIFOInPlaceOfThePlistNeverHangsAndStays() async throws {
    let config = makeConfigFolder()
    try #require(mkfifo(config + "/d.plist", 0o600) == 0)
    for command in [["write", "d", "k", "v"], ["read", "d", "k"], ["read", "d"], ["export", "d", "-"]] {
      let result = try await runTool(command, config: config)
      #expect(result.status == 1, "\(command)")
      #expect(result.error.contains("d.plist is a FIFO, not a file"), "\(command): \(result.error)")
    }
    var info = stat()
    #expect(lstat(config + "/d.plist", &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
    #expect(try FileManager.default.contentsOfDirectory(atPath: config).filter { $0.contains("corrupt") } == [])
    unlink(config + "/d.plist")
    #expect(try await runTool(["write", "d", "k", "v"], config: config).status == 0)
    #expect(try await runTool(["read", "d", "k"], config: config).output == "v\n")
  }

  /// A symbolic link in place of the plist is never followed for writing: the save fails, the link's target keeps
  /// its bytes and mode, and no backup copies the link.
  @Test func aSymlinkedPlistIsLeftAloneAndItsTargetUntouched() async throws {
    let config = makeConfigFolder()
    let victim = config + "/victim.txt"
    try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
    try #require(chmod(victim, 0o644) == 0)
    try #require(symlink(victim, config + "/d.plist") == 0)
    let result = try await runTool(["write", "d", "k", "v"], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("is a symbolic link"), "\(result.error)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Data("precious".utf8))
    var info = stat()
    #expect(stat(victim, &info) == 0 && info.st_mode & 0o777 == 0o644)
    let files = try FileManager.default.contentsOfDirectory(atPath: config)
    #expect(!files.contains { $0.contains("corrupt") }, "\(files)")
    #expect(try await runTool(["read", "d"], config: config).status == 1)
  }

  @Test func aDanglingLockSymlinkCreatesNothing() async throws {
    let config = makeConfigFolder()
    let target = config + "/created-by-the-lock"
    try #require(symlink(target, config + "/d.plist.lock") == 0)
    let result = try await runTool(["write", "d", "k", "v"], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("lock file"), "\(result.error)")
    #expect(!FileManager.default.fileExists(atPath: target))
  }

  /// A save used to lock every live suite of the process at once (one descriptor each): with 1,100 suites and 256
  /// descriptors, suites were never written. Each save now holds its own suite's lock only.
  @Test func elevenHundredLiveSuitesAllSave() async throws {
    let config = makeConfigFolder()
    let result = try await runTool(["many", "1100"], config: config, tool: "rdefaults-test-helper")
    #expect(result.status == 0, "\(result.error)")
    let saved = (0..<1100).filter { index in
      let root = try? PropertyListSerialization.propertyList(
        from: (try? Data(contentsOf: URL(fileURLWithPath: config + "/many\(index).plist"))) ?? Data(), format: nil)
      return (root as? [String: Any])?["k"] as? Int == index
    }
    #expect(saved.count == 1100)
  }

  /// inotify drops a watch whose folder is removed: `watch` must pick the folder up again when it comes back.
  @Test func watchKeepsWatchingWhenItsFolderIsRemovedAndComesBack() async throws {
    let root = makeConfigFolder()
    let config = root + "/config"
    try await runTool(["write", "d", "k", "1"], config: config)
    let watcher = try RunningTool(["watch", "d"], config: config)
    #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching") } })
    for value in 2...4 {
      // The watcher, another process, may be creating the suite's lock file in the folder right now (a reload of
      // the last write takes the suite's lock): the removal then finds the folder not empty, and is tried again.
      var attempts = 0
      while (try? FileManager.default.removeItem(atPath: root)) == nil, FileManager.default.fileExists(atPath: root) {
        attempts += 1
        try #require(attempts < 1_000, "the folder could not be removed")
        await Task.yield()
      }
      try await runTool(["write", "d", "k", "\(value)"], config: config)
      #expect(await watcher.lines.wait { $0.contains("k = \(value)") }, "\(watcher.lines.lines)")
    }
    await watcher.kill(SIGTERM)
  }

  /// Watching a domain whose folder does not exist yet creates nothing, and still sees the first write.
  @Test func watchingAMissingFolderCreatesNothingAndSeesTheFirstWrite() async throws {
    let config = makeConfigFolder() + "/not-yet"
    let watcher = try RunningTool(["watch", "d"], config: config)
    #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching") } })
    #expect(!FileManager.default.fileExists(atPath: config), "watching created the folder")
    try await runTool(["write", "d", "k", "1"], config: config)
    #expect(await watcher.lines.wait { $0.contains("k = 1") }, "\(watcher.lines.lines)")
    await watcher.kill(SIGTERM)
  }

  /// corelibs' binary parser crashes on a plist holding a set; `import` reads through the strict reader.
  @Test func importRefusesABinaryPlistWithASetWithoutCrashing() async throws {
    let config = makeConfigFolder()
    // {"k": [1]} as written by Python's plistlib, with the array marker (0xA1) turned into a set's (0xC1).
    var bytes = try #require(
      Data(base64Encoded: "YnBsaXN0MDDRAQJRa6EDEAEICw0PAAAAAAAAAQEAAAAAAAAABAAAAAAAAAAAAAAAAAAAABE="))
    let marker = try #require(bytes.firstIndex(of: 0xA1))
    bytes[marker] = 0xC1
    let file = config + "/set.plist"
    try bytes.write(to: URL(fileURLWithPath: file))
    let result = try await runTool(["import", "d", file], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("cannot be imported"), "\(result.error)")
  }

  @Test func readingAnUnreadableDomainIsAnError() async throws {
    let config = makeConfigFolder()
    let garbage = Data("not a plist at all".utf8)
    try garbage.write(to: URL(fileURLWithPath: config + "/d.plist"))
    let result = try await runTool(["read", "d"], config: config)
    #expect(result.status == 1)
    #expect(result.error.contains("is not a property list"), "\(result.error)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: config + "/d.plist")) == garbage, "reading changed the file")
  }
}
