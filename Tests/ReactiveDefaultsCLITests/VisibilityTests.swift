import ChildProcess
import Foundation
import Observation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// A suite name no other test uses, in this process's preferences folder; its files are removed at the end.
private func withFreshSuite(_ body: (String) async throws -> Void) async rethrows {
  let name = "Visibility." + UUID().uuidString
  defer {
    for suffix in [".plist", ".plist.lock", ".plist.journal"] {
      try? FileManager.default.removeItem(atPath: processConfigFolder + "/" + name + suffix)
    }
  }
  try await body(name)
}

/// Waits until a reload of `store`'s suite (caused by a change of its file) finds `condition` true, or `timeout`
/// seconds pass; the event is the reload itself, not the passing of time.
private func afterReloads(
  of store: DefaultsStore, timeout: Double = 10, until condition: @escaping @Sendable () -> Bool
) async -> Bool {
  let seen = Recorder<Bool>()
  let token = store.watchSuiteFile { seen.append(condition()) }
  defer { token?.cancel() }
  // Already true (the reload ran before the watch began): no event will come, and none is needed.
  if condition() { return true }
  return await seen.wait(timeout: timeout) { $0.contains(true) }
}

@Observable private final class Counter {
  @ObservationIgnored @Default<Int> var count: Int
  init(store: DefaultsStore) { _count = Default(DefaultsKey<Int>("count", default: 0), store: store) }
}

/// Reads follow the file, in the orders users produce: a store opened before the file exists, one with no
/// observer, suites starting at once, a file deleted and written again.
@Suite(.linuxOnly) struct VisibilityTests {
  /// A store opened before its suite's file exists; four processes then update the suite: `refresh()` reads their
  /// last save, through this store and through a second one.
  @Test func aStoreOpenedBeforeTheFileExistsSeesOtherProcessesUpdates() async throws {
    try await withFreshSuite { name in
      let store = try #require(DefaultsStore(suiteName: name))
      let key = DefaultsKey<Int>("count", default: 0)
      #expect(store[key] == 0)
      let workers = try (0..<4).map { _ in
        try RunningTool(
          ["increment", name, "count", "250"], config: processConfigFolder, tool: "rdefaults-test-helper")
      }
      for worker in workers { #expect(await worker.lines.wait { $0.contains("ready") }) }
      for worker in workers { worker.send("go") }
      for worker in workers {
        #expect(await worker.exited(timeout: 120))
        #expect(worker.process.terminationStatus == 0)
      }
      store.refresh()
      #expect(store[key] == 1000)
      #expect(DefaultsStore(suiteName: name)?[key] == 1000)
    }
  }

  /// A store with no observer over an existing file: another process's save reaches its reads on its own, and at
  /// once after `refresh()`. A thread reading in a tight loop meanwhile must not pin an old value (corelibs rebuilds
  /// its merged view of the suite on such a read, and a view built from the old copy while the reload ran
  /// outlived it).
  @Test func aStoreWithNoObserverReadsAnotherProcessesSave() async throws {
    try await withFreshSuite { name in
      let key = DefaultsKey<Int>("value", default: 0)
      try await runTool(["write", name, "value", "-int", "1"], config: processConfigFolder)
      let store = try #require(DefaultsStore(suiteName: name))
      #expect(store[key] == 1)
      // 10,000 reads a round (about as many as fit in a round here), paid by the rounds (``WorkBudget``).
      let reads = WorkBudget()
      Thread {
        while reads.take() { _ = store[key] }
      }.start()
      defer { reads.end() }
      for value in 2...6 {
        reads.add(10_000)
        try await runTool(["write", name, "value", "-int", "\(value)"], config: processConfigFolder)
        #expect(await afterReloads(of: store) { store[key] == value }, "read \(store[key]), not \(value)")
        #expect(store.hub.observerCount == 0)
      }
      try await runTool(["write", name, "value", "-int", "7"], config: processConfigFolder)
      store.refresh()
      #expect(store[key] == 7, "refresh() returned before the save completed earlier was read")
    }
  }

  /// Two suites in one folder, neither with a file yet, observed at about the same time (one by several keys, one
  /// through Observation), each then saved by another process: both observers hear of it.
  @Test(arguments: 0..<5) func twoFreshSuitesObservedAtOnceBothSeeTheirSaves(round: Int) async throws {
    try await withFreshSuite { first in
      try await withFreshSuite { second in
        try await withThrowingTaskGroup(of: Void.self) { group in
          group.addTask {
            let store = try #require(DefaultsStore(suiteName: first))
            let seen = Recorder<Int>()
            let token = store.observe(DefaultsKey<Int>("count", default: 0), DefaultsKey<Bool>("flag", default: false))
            {
              count, _ in seen.append(count)
            }
            try await runTool(["write", first, "count", "-int", "\(round + 10)"], config: processConfigFolder)
            #expect(await seen.wait(timeout: 10) { $0.last == round + 10 }, "the multi-key observer saw \(seen.values)")
            token.cancel()
          }
          group.addTask {
            let store = try #require(DefaultsStore(suiteName: second))
            let model = Counter(store: store)
            let changed = trackObservation { _ = model.count }
            try await runTool(["write", second, "count", "-int", "\(round + 20)"], config: processConfigFolder)
            #expect(await changed.wait(timeout: 10) { !$0.isEmpty }, "Observation never fired")
            #expect(model.count == round + 20)
          }
          try await group.waitForAll()
        }
      }
    }
  }

  /// A store opened before the file exists, observed only after another process saved it: the save made between
  /// the open and the first observer reaches the observer.
  @Test func aSaveBetweenOpeningAndObservingReachesTheObserver() async throws {
    try await withFreshSuite { name in
      let store = try #require(DefaultsStore(suiteName: name))
      let key = DefaultsKey<Int>("count", default: 0)
      #expect(store[key] == 0)
      try await runTool(["write", name, "count", "-int", "5"], config: processConfigFolder)
      let seen = Recorder<Int>()
      let token = store.property(key).observe { seen.append($0) }
      #expect(await seen.wait(timeout: 10) { $0.last == 5 }, "seen \(seen.values)")
      token.cancel()
    }
  }

  /// One suite observed while other suites' stores of the same folder start, observe, write and stop in a loop on
  /// another thread; another process writes the observed suite, deletes it and writes it again: every value arrives.
  @Test func anObserverSeesEverySaveWhileOtherSuitesStartAndStop() async throws {
    try await withFreshSuite { name in
      let store = try #require(DefaultsStore(suiteName: name))
      let key = DefaultsKey<Int>("count", default: -1)
      let seen = Recorder<Int>()
      let token = store.property(key).observe { seen.append($0) }
      // Paid by the rounds (``WorkBudget``): 100 stores of other suites and 10,000 reads a round, about as many as fit
      // in a round here.
      let churning = WorkBudget()
      let reads = WorkBudget()
      let others = "Visibility.churn." + UUID().uuidString
      let churn = Thread {
        var round = 0
        while churning.take() {
          round += 1
          guard let other = DefaultsStore(suiteName: others + ".\(round % 3)") else { return }
          let observation = other.property(key).observe { _ in }
          other[key] = round
          if round % 5 == 0 { other.flush() }
          observation.cancel()
        }
        for index in 0..<3 {
          DefaultsStore(suiteName: others + ".\(index)")?.removeAll()
          DefaultsStore(suiteName: others + ".\(index)")?.flush()
          // The lock files stay when a suite goes; no other process knows these names.
          try? FileManager.default.removeItem(atPath: processConfigFolder + "/" + others + ".\(index).plist.lock")
        }
      }
      churn.start()
      // Reads of the observed suite in a tight loop meanwhile (a merged view built from an old copy during a reload
      // would pin the old value).
      let reader = Thread {
        while reads.take() { _ = store[key] }
      }
      reader.start()
      defer {
        churning.end()
        reads.end()
      }
      for value in 1...5 {
        churning.add(100)
        reads.add(10_000)
        try await runTool(["write", name, "count", "-int", "\(value)"], config: processConfigFolder)
        #expect(await seen.wait(timeout: 5) { $0.last == value }, "\(value) never arrived; seen \(seen.values)")
      }
      churning.add(100)
      reads.add(10_000)
      try await runTool(["delete", name], config: processConfigFolder)
      #expect(await seen.wait(timeout: 5) { $0.last == -1 }, "the delete never arrived; seen \(seen.values)")
      churning.add(100)
      reads.add(10_000)
      try await runTool(["write", name, "count", "-int", "9"], config: processConfigFolder)
      #expect(await seen.wait(timeout: 5) { $0.last == 9 }, "the rewrite never arrived; seen \(seen.values)")
      #expect(store[key] == 9)
      token.cancel()
    }
  }

  /// The same orders with the file removed and created again by hand (not through the library), and a store opened
  /// while there is no file at all.
  @Test func readsFollowAFileRemovedAndRecreated() async throws {
    try await withFreshSuite { name in
      let key = DefaultsKey<Int>("value", default: 0)
      let store = try #require(DefaultsStore(suiteName: name))
      try await runTool(["write", name, "value", "-int", "3"], config: processConfigFolder)
      #expect(await afterReloads(of: store) { store[key] == 3 })
      try FileManager.default.removeItem(atPath: processConfigFolder + "/\(name).plist")
      #expect(await afterReloads(of: store) { store[key] == 0 })
      try await runTool(["write", name, "value", "-int", "4"], config: processConfigFolder)
      #expect(await afterReloads(of: store) { store[key] == 4 })
    }
  }

  /// A store opened while another process creates the file: the open found no file, then corelibs loaded the new one.
  /// That copy was recorded as the missing file; the process never observed the suite, so nothing reloaded it, and
  /// once `rdefaults delete` removed the file, every read and every `update` took the stale copy for the missing file
  /// (history checker, seed 666665072). The file is created at the moment the checker's run did: after the open
  /// found none, before corelibs loads.
  @Test(arguments: [false, true]) func aFileCreatedWhileAStoreOpensDoesNotOutliveItsDeletion(
    readingInAnUpdate: Bool
  ) async throws {
    try await withFreshSuite { name in
      let key = DefaultsKey<Int>("value", default: 0)
      let path = processConfigFolder + "/\(name).plist"
      let created = Recorder<Bool>()
      TrackedFile.saveSteps.withLock { hooks in
        hooks[path] = { step in
          guard step == .beforeLoadingMissingFile, created.count == 0 else { return }
          // Another process's save: a whole file renamed into place.
          created.append(
            (try? SuiteFile.encode(["value": .integer(7)]).write(to: URL(fileURLWithPath: path), options: .atomic))
              != nil)
        }
      }
      defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
      let store = try #require(await offThePool { DefaultsStore(suiteName: name) })
      #expect(created.values == [true])
      try await runTool(["delete", name], config: processConfigFolder)
      #expect(!FileManager.default.fileExists(atPath: path))
      guard readingInAnUpdate else {
        #expect(store[key] == 0)
        return
      }
      // Read under the suite's lock (the checker's failure).
      let read = Recorder<Int>()
      let property = store.property(key)
      _ = try await offThePool {
        try property.update {
          read.append($0)
          $0 = 8
        }
      }
      #expect(read.values == [0])
      #expect(store[key] == 8)
    }
  }
}
