import ChildProcess
import Foundation
import Observation
import Synchronization
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// Other threads of this process doing what an app's threads do, until stopped: open and release stores on other
/// suites and file stores (in folders of their own and in a shared one), observe and cancel, write and save, and start
/// child processes. At most 300 steps a thread (about a second's worth here), then they wait to be stopped: paid by
/// the work, not by the time (``WorkBudget``).
final class Churn: Sendable {
  private let steps = WorkBudget()
  private let finished = Recorder<Int>()
  private let threads: Int
  let folders: [String]
  /// The prefix of its suites' names, its own: the churns of tests running at once neither share suites nor remove
  /// each other's files.
  private let suitePrefix = "Churn.\(UUID().uuidString.prefix(8))"

  /// Starts `threads` churning threads; `sharedFolder` is a folder they also use (a file store test's own).
  init(threads: Int = 3, sharedFolder: String? = nil) {
    self.threads = threads
    let own = (0..<2).map { _ in makeConfigFolder() }
    folders = own + (sharedFolder.map { [$0] } ?? [])
    steps.add(threads * 300)
    for index in 0..<threads {
      let thread = Thread { [self] in run(index) }
      thread.start()
    }
  }

  private func run(_ index: Int) {
    var random = SystemRandomNumberGenerator()
    var held: [(DefaultsStore, DefaultsObservation?)] = []
    var round = 0
    while steps.take() {
      round += 1
      let key = DefaultsKey<Int>("churn", default: 0)
      switch Int.random(in: 0..<6, using: &random) {
      case 0, 1:
        let folder = folders.randomElement(using: &random)!
        let path = folder + "/churn-\(index)-\(Int.random(in: 0..<3, using: &random)).plist"
        guard let store = DefaultsStore(fileURL: URL(fileURLWithPath: path)) else { continue }
        let token = Bool.random(using: &random) ? store.property(key).observe { _ in } : nil
        store[key] = round
        if Bool.random(using: &random) { try? store.save() }
        held.append((store, token))
      case 2:
        let name = "\(suitePrefix).\(index).\(Int.random(in: 0..<3, using: &random))"
        guard let store = DefaultsStore(suiteName: name) else { continue }
        let token = Bool.random(using: &random) ? store.property(key).observe { _ in } : nil
        store[key] = round
        held.append((store, token))
      case 3:
        if !held.isEmpty { held.remove(at: Int.random(in: 0..<held.count, using: &random)).1?.cancel() }
      case 4:
        held.removeAll()
      default:
        let child = try? ChildProcess(executable: "/usr/bin/true", arguments: [], environment: [:])
        _ = child?.waitUntilExit()
      }
    }
    held.removeAll()
    finished.append(index)
  }

  /// Stops the threads and waits for them; then removes the folders of its own.
  func stop() async {
    steps.end()
    _ = await finished.wait(timeout: 60) { $0.count == self.threads }
    for folder in folders.prefix(2) { try? FileManager.default.removeItem(atPath: folder) }
    for index in 0..<threads {
      for suite in 0..<3 {
        for suffix in [".plist", ".plist.lock", ".plist.journal"] {
          try? FileManager.default.removeItem(
            atPath: processConfigFolder + "/\(suitePrefix).\(index).\(suite)" + suffix)
        }
      }
    }
  }
}

/// Replaces the property list at `path` as another program does: Python's `plistlib.dump` to a temporary file, then
/// `os.replace` over it.
func replaceWithPython(_ path: String, key: String, value: Int) async throws -> ProcessResult {
  let script = """
    import os, plistlib, sys
    path, key, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        with open(path, 'rb') as f: root = plistlib.load(f)
    except FileNotFoundError:
        root = {}
    root[key] = value
    with open(path + '.tmp', 'wb') as f: plistlib.dump(root, f)
    os.replace(path + '.tmp', path)
    """
  return try await runTool(
    ["python3", "-c", script, path, key, "\(value)"], config: makeConfigFolder(), tool: "/usr/bin/env")
}

@Observable private final class Player {
  @ObservationIgnored @Default<Double> var volume: Double
  init(store: DefaultsStore) { _volume = Default(DefaultsKey<Double>("volume", default: 0.5), store: store) }
}

/// Observers that only wait, in a process whose other threads are busy with other stores: another process's save
/// reaches them. One case at a time: each starts three threads of churn, and all of them at once (thirty threads)
/// held both cores from the rest of the suite.
@Suite(.linuxOnly, .serialized) struct BusyProcessTests {
  /// A file store written and saved; a second store over the same file observes a key; another program replaces the
  /// file atomically (Python's `plistlib.dump` to a temporary file, then `os.replace`); the test then only waits,
  /// reading nothing, while other threads of this process churn through stores and observers of other suites and file
  /// stores (one in this file's folder) and start child processes.
  @Test(arguments: 0..<5) func aQuietFileStoreObserverHearsAnotherProgramsReplacement(round: Int) async throws {
    let folder = makeConfigFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let churn = Churn(sharedFolder: folder)
    let path = folder + "/settings.plist"
    let key = DefaultsKey<Int>("count", default: 0)
    let first = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: path)))
    first[key] = 1
    try await offThePool { try first.save() }
    let second = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: path)))
    let seen = Recorder<Int>()
    let token = second.property(key).observe { seen.append($0) }
    let replaced = try await replaceWithPython(path, key: "count", value: 2)
    #expect(replaced.status == 0, "\(replaced.error)")
    #expect(await seen.wait(timeout: 5) { $0.last == 2 }, "seen \(seen.values)")
    token.cancel()
    await churn.stop()
  }

  /// A fresh suite, an `@Observable` model with an `@ObservationIgnored @Default` property, tracked; another process
  /// writes the key (`rdefaults write`); the test then only waits, while other threads of this process churn.
  @Test(arguments: 0..<5) func aQuietObservableModelHearsAnotherProcessesWrite(round: Int) async throws {
    let name = "BusyProcess." + UUID().uuidString
    defer {
      for suffix in [".plist", ".plist.lock", ".plist.journal"] {
        try? FileManager.default.removeItem(atPath: processConfigFolder + "/" + name + suffix)
      }
    }
    let churn = Churn()
    let store = try #require(DefaultsStore(suiteName: name))
    let model = Player(store: store)
    let changed = trackObservation { _ = model.volume }
    let written = try await runTool(["write", name, "volume", "-float", "0.3"], config: processConfigFolder)
    #expect(written.status == 0, "\(written.error)")
    #expect(await changed.wait(timeout: 10) { !$0.isEmpty }, "Observation never fired")
    await churn.stop()
  }

  /// A read of a key this process wrote and has not saved yet gives that write, while three other threads call
  /// `getpwuid` in a loop (in a process of its own: such a loop holds glibc's lock around `getpwuid` for long
  /// stretches, which would slow every other test's use of `UserDefaults`). corelibs names its copies of a suite by
  /// the user's name, read from `getpwuid`'s one buffer: a name read while another call rewrites it names a stray copy,
  /// loaded from the file, without the write. Before, about 1 read in 20,000 gave the previous value, every run.
  @Test func unsavedWritesReadBackWhileOtherThreadsLookUpTheUser() async throws {
    let folder = makeConfigFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let result = try await runTool(
      ["userrace", "BusyProcess.userrace", "20000"], config: folder, tool: "rdefaults-test-helper")
    #expect(result.output == "0 20000\n", "stale reads, of rounds: \(result.output)\(result.error)")
  }
}
