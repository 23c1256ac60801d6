import Foundation
import Synchronization
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// A fresh folder for one test's file store, removed at the end.
private func withFile(_ body: (String) async throws -> Void) async rethrows {
  let folder = makeConfigFolder()
  defer { try? FileManager.default.removeItem(atPath: folder) }
  try await body(folder + "/settings.plist")
}

/// File stores across real processes: `rdefaults --file` in a child, the library here.
@Suite(.linuxOnly) struct FileStoreProcessTests {
  /// Another process's save reaches an observer here, and a read here with no observer; a write here saved after
  /// it keeps the other process's key.
  @Test func anotherProcessesSaveReachesObserversAndReads() async throws {
    try await withFile { path in
      let store = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: path)))
      let count = DefaultsKey<Int>("count", default: 0)
      let seen = Recorder<Int>()
      let token = store.property(count).observe { seen.append($0) }
      let written = try await runTool(["write", "--file", path, "count", "-int", "41"], config: makeConfigFolder())
      #expect(written.status == 0, "\(written.error)")
      #expect(await seen.wait(timeout: 10) { $0.last == 41 })
      token.cancel()
      try await runTool(["write", "--file", path, "count", "-int", "42"], config: makeConfigFolder())
      #expect(store[count] == 42)
      store[DefaultsKey<String>("mine", default: "")] = "here"
      try await offThePool { try store.save() }
      let listing = try await runTool(["export", "--file", path, "-"], config: makeConfigFolder())
      let root = try PropertyListSerialization.propertyList(from: Data(listing.output.utf8), format: nil)
      #expect((root as? [String: Any])?["count"] as? Int == 42)
      #expect((root as? [String: Any])?["mine"] as? String == "here")
    }
  }

  /// An observer of a file whose folder does not exist yet hears another process's first save, which creates the
  /// folder (the watch of the missing folder is tried again until it can begin).
  @Test func anObserverBeforeTheFolderExistsHearsTheFirstSave() async throws {
    try await withFile { path in
      let nested = (path as NSString).deletingLastPathComponent + "/not/yet/settings.plist"
      let store = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: nested)))
      let count = DefaultsKey<Int>("count", default: 0)
      let seen = Recorder<Int>()
      let token = store.property(count).observe { seen.append($0) }
      defer { token.cancel() }
      #expect(await seen.wait(timeout: 10) { $0 == [0] })
      let written = try await runTool(["write", "--file", nested, "count", "-int", "9"], config: makeConfigFolder())
      #expect(written.status == 0, "\(written.error)")
      #expect(await seen.wait(timeout: 10) { $0.last == 9 }, "\(seen.values)")
    }
  }

  /// Writer processes on one file, at once: every key of every one is in the file (the lock and the merge).
  @Test func concurrentWriterProcessesLoseNoKeys() async throws {
    try await withFile { path in
      try await withThrowingTaskGroup(of: Void.self) { group in
        for writer in 0..<3 {
          group.addTask {
            for index in 0..<20 {
              let result = try await runTool(
                ["write", "--file", path, "w\(writer)k\(index)", "-int", "\(index)"], config: makeConfigFolder())
              #expect(result.status == 0, "\(result.error)")
            }
          }
        }
        try await group.waitForAll()
      }
      let data = try #require(FileManager.default.contents(atPath: path))
      #expect(try DefaultsStore.domain(fromPropertyList: data).count == 60)
    }
  }

  /// A reader that takes no lock (another program) never finds the file cut while the library saves 10,000 keys
  /// again and again: every save is a new file renamed over the old one.
  @Test func aPlainReaderNeverFindsTheFileCut() async throws {
    try await withFile { path in
      let store = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: path)))
      for index in 0..<10_000 { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
      try await offThePool { try store.save() }
      let saving = Atomic<Bool>(true)
      let torn = Atomic<Int>(0)
      let reads = Atomic<Int>(0)
      let reader = Thread {
        while saving.load(ordering: .relaxed) {
          guard let data = FileManager.default.contents(atPath: path) else { continue }
          reads.add(1, ordering: .relaxed)
          let root = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
          if root?.count != 10_000 { torn.add(1, ordering: .relaxed) }
        }
      }
      reader.start()
      try await offThePool {
        for round in 0..<30 {
          store[DefaultsKey<Int>("k0", default: 0)] = round
          try store.save()
        }
      }
      saving.store(false, ordering: .relaxed)
      #expect(reads.load(ordering: .relaxed) > 0)
      #expect(torn.load(ordering: .relaxed) == 0)
    }
  }

  /// `rdefaults watch --file` prints another process's change, and `delete --file` removes the file.
  @Test func watchAndDeleteAddressTheFile() async throws {
    try await withFile { path in
      try await runTool(["write", "--file", path, "a", "1"], config: makeConfigFolder())
      let watcher = try RunningTool(["watch", "--file", path], config: makeConfigFolder())
      #expect(await watcher.errorLines.wait { $0.contains { $0.hasPrefix("Watching") } })
      try await runTool(["write", "--file", path, "b", "2"], config: makeConfigFolder())
      #expect(await watcher.lines.wait { $0.contains("b = 2") })
      await watcher.kill(SIGTERM)
      let deleted = try await runTool(["delete", "--file", path], config: makeConfigFolder())
      #expect(deleted.status == 0, "\(deleted.error)")
      #expect(!FileManager.default.fileExists(atPath: path))
      let missing = try await runTool(["read", "--file", path], config: makeConfigFolder())
      #expect(missing.status == 1)
      #expect(missing.error.contains("does not exist"))
    }
  }

  /// `--file` without a path, or with one that names no file, is a usage error (exit 64); each shell's completions
  /// offer `--file` and complete file names after it.
  @Test func fileOptionErrorsAndCompletions() async throws {
    let config = makeConfigFolder()
    defer { try? FileManager.default.removeItem(atPath: config) }
    for arguments in [["write", "--file"], ["read", "--file", ""], ["read", "--file", "folder/"]] {
      let result = try await runTool(arguments, config: config)
      #expect(result.status == 64, "\(arguments): \(result.error)")
      #expect(result.error.hasPrefix("Error: "), "\(arguments)")
    }
    // A path that looks like an option, or is `--`, is the file's path all the same.
    let dashed = config + "/-x.plist"
    #expect(try await runTool(["write", "--file", dashed, "k", "v"], config: config).status == 0)
    #expect(try await runTool(["read", "--file", dashed, "k"], config: config).output == "v\n")
    let named = try await runTool(["read", "--file", "--"], config: config)
    #expect(named.status == 1 && named.error.contains("file '--' does not exist"), "\(named.error)")
    let bash = try await runTool(["--generate-completion-script", "bash"], config: config).output
    #expect(bash.contains("--file"))
    #expect(bash.contains("${COMP_WORDS[COMP_CWORD-1]} == --file"))
    let zsh = try await runTool(["--generate-completion-script", "zsh"], config: config).output
    #expect(zsh.contains("${words[CURRENT-1]} == --file"))
    let fish = try await runTool(["--generate-completion-script", "fish"], config: config).output
    #expect(fish.contains("__fish_seen_subcommand_from read' -l file -r -F"))
  }
}
