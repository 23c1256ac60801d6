import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#endif

/// What an app's observer does from inside `UserDefaults.set` (Apple calls key-value and notification observers
/// synchronously there, on the writing thread).
enum Reentry: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case writeAnotherKey, writeTheSameKey, refresh, registerAnObserver, readAPropertyForTheFirstTime
  var testDescription: String { rawValue }
}

/// An in-memory store that behaves as Apple's `UserDefaults`: `onWrite` runs inside every write, and the change
/// notification is posted there too.
private func appleLikeStore(
  onWrite: @escaping @Sendable (DefaultsStore, String) -> Void
) -> (DefaultsStore, MemoryStorage) {
  let box = Mutex<DefaultsStore?>(nil)
  let storage = MemoryStorage(
    behavior: .init(
      postsChangesInsideWrites: true,
      onWrite: { key in
        if let store = box.withLock({ $0 }) { onWrite(store, key) }
      },
      reportsKeyChanges: true))
  let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
  box.withLock { $0 = store }
  return (store, storage)
}

/// Runs `body` on a thread of its own; false when it has not finished within `timeout` seconds (a deadlock). The test
/// waits suspended, holding no thread.
private func finishes(timeout: Double = 30, _ body: @escaping @Sendable () -> Void) async -> Bool {
  let done = Recorder<Bool>()
  Thread {
    body()
    done.append(true)
  }.start()
  return await done.wait(timeout: timeout) { !$0.isEmpty }
}

private let other = DefaultsKey<Int>("other", default: 0)

@Suite struct ReentrancyTests {
  /// Each thing an app's observer may do from inside a write: no deadlock, every observer ends on the stored
  /// value, and per key an observer never sees an older value after a newer one.
  @Test(arguments: Reentry.allCases)
  func storageCallbacksInsideAWriteDoNotDeadlock(reentry: Reentry) async {
    let tokens = Recorder<DefaultsObservation>()
    let (store, _) = appleLikeStore { store, key in
      guard key == "count" else { return }
      let value = store[.count]
      switch reentry {
      case .writeAnotherKey: store[other] = value
      case .writeTheSameKey: if value.isMultiple(of: 2) == false { store[.count] = value + 1 }
      case .refresh: store.refresh()
      case .registerAnObserver: tokens.append(store.property(.count).observe { _ in })
      case .readAPropertyForTheFirstTime: _ = store.property(other).value
      }
    }
    let counts = Recorder<Int>()
    let others = Recorder<Int>()
    let countToken = store.property(.count).observe { counts.append($0) }
    let otherToken = store.property(other).observe { others.append($0) }
    #expect(
      await finishes {
        for value in 1...20 { store[.count] = value }
      }, "deadlock")
    #expect(counts.last == store[.count])
    #expect(others.last == store[other])
    #expect(counts.values == counts.values.sorted() && Set(counts.values).count == counts.count, "\(counts.values)")
    #expect(store[.count] == 20)
    if reentry == .writeAnotherKey { #expect(store[other] == 20) }
    if reentry == .registerAnObserver { #expect(store.hub.observerCount == 2 + 20) }
    withExtendedLifetime((countToken, otherToken, tokens)) {}
  }

  /// Writes from two threads while callbacks write from inside: the versions stay in storage order.
  @Test func concurrentWritersWithCallbacksConverge() async {
    let (store, _) = appleLikeStore { store, key in
      if key == "count" { store[other] = store[.count] }
    }
    let seen = Recorder<Int>()
    let token = store.property(other).observe { seen.append($0) }
    #expect(
      await finishes {
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
          for value in 0..<500 { store[.count] = value * 2 + writer }
        }
      }, "deadlock")
    #expect(seen.last == store[other])
    #expect(store[other] == store[.count])
    withExtendedLifetime(token) {}
  }
}

@Suite struct AppleBehaviorTests {
  /// A write by "another process" (reported the way key-value observing reports it) reaches the observer once.
  @Test func aForeignWriteReachesObserversOnce() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    storage.writeFromOutside(.integer(7), forKey: "count")
    #expect(await seen.wait { $0 == [0, 7] })
    storage.writeFromOutside(.integer(7), forKey: "count")
    store[.count] = 8
    // The re-read of the second report may be delivering right now: then it delivers 8 too, just after.
    #expect(await seen.wait { $0.last == 8 })
    #expect(seen.values == [0, 7, 8], "\(seen.values)")
    withExtendedLifetime(token) {}
  }

  /// Apple posts `didChangeNotification` inside the library's own write: the write is delivered once, and the
  /// notification schedules no refresh (the hub recognises its own write); a plain write's in this process does.
  @Test func ourOwnWriteSchedulesNoRefresh() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    for value in 1...5 { store[.count] = value }
    #expect(seen.values == [0, 1, 2, 3, 4, 5])
    #expect(store.hub.externalRefreshCount.load(ordering: .relaxed) == 0)
    storage.writeInProcess(.integer(6), forKey: "count")
    #expect(store.hub.externalRefreshCount.load(ordering: .relaxed) == 1)
    #expect(await seen.wait { $0.last == 6 })
    withExtendedLifetime(token) {}
  }
}

@Suite struct AppleURLTests {
  /// Apple's `set(_: URL?, forKey:)` stores a file in the home folder as `~/…` relative to the working directory;
  /// the library writes URLs that way on Apple platforms. Read back, it is the same file (not `<cwd>/~/…`).
  @Test func aHomeFolderFileURLWrittenTheApplewayReadsBackAsTheSameFile() throws {
    let storage = MemoryStorage(behavior: .init(storesURLsAsApple: true))
    let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
    let file = URL(fileURLWithPath: NSHomeDirectory() + "/Documents/report.pdf")
    store.hub.write(.url(file), forKey: "documentUrl")
    guard case .data(let archive)? = storage.value(forKey: "documentUrl") else {
      Issue.record("no archive stored")
      return
    }
    #expect(KeyedArchive.url(from: archive)?.relativePath.hasPrefix("~") == true, "not stored the Apple way")
    #expect(store[.documentURL]?.path == file.path)
  }
}

@Suite struct KeyValueObservingTests {
  /// Another process's write (Apple reports it through key-value observing only) reaches observers once; our own
  /// writes, which key-value observing also reports from inside `set`, are not re-read.
  @Test func anotherProcessesWriteReachesObserversOnceAndOurOwnAreNotReadAgain() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    for value in 1...3 { store[.count] = value }
    #expect(store.hub.keyReportCount.load(ordering: .relaxed) == 0, "our own writes were re-read")
    storage.writeFromOutside(.integer(9), forKey: "count")
    #expect(await seen.wait { $0.last == 9 })
    #expect(store.hub.keyReportCount.load(ordering: .relaxed) == 1)
    #expect(seen.values == [0, 1, 2, 3, 9])
    withExtendedLifetime(token) {}
  }

  /// Key-value observing cannot address keys with `.` or `@`: they are never registered, so another process's
  /// write of one is not seen (documented), while a write in this process still is (the change notification).
  @Test func keysKeyValueObservingCannotAddressFallBackToTheNotification() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let dotted = DefaultsKey<Int>("player.volume", default: 0)
    let dottedSeen = Recorder<Int>()
    let countSeen = Recorder<Int>()
    let tokens = [
      store.property(dotted).observe { dottedSeen.append($0) },
      store.property(.count).observe { countSeen.append($0) },
    ]
    if case let memory as MemoryStorage = store.hub.storage {
      #expect(memory.registrations.registeredKeys == ["count"])
    }
    storage.writeFromOutside(.integer(5), forKey: "player.volume")
    storage.writeFromOutside(.integer(1), forKey: "count")
    #expect(await countSeen.wait { $0.last == 1 })
    #expect(dottedSeen.values == [0], "a foreign write of an unaddressable key cannot be seen")
    storage.writeInProcess(.integer(6), forKey: "player.volume")
    #expect(await dottedSeen.wait { $0.last == 6 })
    withExtendedLifetime(tokens) {}
  }

  /// A key is registered with its first observer and unregistered with its last, whatever the threads.
  @Test func registrationsFollowTheFirstAndLastObserverOfEachKey() {
    let (store, storage) = appleLikeStore { _, _ in }
    let first = store.property(.count).observe { _ in }
    let second = store.property(.count).observe { _ in }
    #expect(storage.registrations.registeredKeys == ["count"])
    first.cancel()
    #expect(storage.registrations.registeredKeys == ["count"])
    second.cancel()
    #expect(storage.registrations.registeredKeys.isEmpty)
    DispatchQueue.concurrentPerform(iterations: 8) { index in
      let key = DefaultsKey<Int>("key\(index % 3)", default: 0)
      for _ in 0..<200 { store.property(key).observe { _ in }.cancel() }
    }
    #expect(storage.registrations.registeredKeys.isEmpty)
    let kept = (0..<3).map { store.property(DefaultsKey<Int>("key\($0)", default: 0)).observe { _ in } }
    #expect(storage.registrations.registeredKeys == ["key0", "key1", "key2"])
    withExtendedLifetime(kept) {}
  }

  @Test func theRegistrationStateMachine() {
    var state = KeyRegistrations.State()
    var apply = state.change("a", by: 1)
    #expect(apply)
    var action = state.next()
    #expect(action == .register("a"))
    action = state.next()
    #expect(action == .done)
    apply = state.change("a.b", by: 1)
    #expect(!apply, "never registered")
    apply = state.change("a", by: -1)
    #expect(apply)
    // A report arriving while another thread applies: recorded, applied by that thread.
    apply = state.change("c", by: 1)
    #expect(!apply)
    var actions: [KeyRegistrations.Action] = []
    repeat { actions.append(state.next()) } while actions.last != .done
    #expect(Set(actions) == [.register("c"), .unregister("a"), .done])
    #expect(state.registered == ["c"])
    // A −1 arriving before its +1 (two threads): the key ends unregistered, not registered for good.
    var early = KeyRegistrations.State()
    _ = early.change("d", by: -1)
    _ = early.change("d", by: 1)
    while early.next() != .done {}
    #expect(early.registered.isEmpty && early.wanted.isEmpty)
  }

  /// Key-value observing splits a key path on the scalar `.` and reads `@` as an operator: a key holding either as a
  /// scalar is never registered, even where it hides inside a Character (a dot or an at sign with a combining accent).
  @Test(arguments: ["a.b", "a.\u{301}b", "@count", "x@\u{301}", ".\u{301}", ""])
  func keysKeyValueObservingWouldSplitAreNotRegistered(_ key: String) {
    #expect(!KeyRegistrations.canRegister(key))
    var state = KeyRegistrations.State()
    let applies = state.change(key, by: 1)
    #expect(!applies, "never registered")
  }

  @Test(arguments: ["volume", "caf\u{E9}", "cafe\u{301}", "a\u{2024}b", "\u{FF20}"])
  func otherKeysAreRegistered(_ key: String) {
    #expect(KeyRegistrations.canRegister(key))
  }
}

@Suite struct StorePairingTests {
  /// A store by name and a store over an instance of the same suite, made in either order, share one hub: each sees
  /// the other's writes at once, in process.
  @Test(arguments: [false, true])
  func aNamedStoreAndAStoreOverAnInstanceShareChanges(instanceFirst: Bool) {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let instance = UserDefaults(suiteName: name)!
    let (byName, overInstance) =
      instanceFirst
      ? {
        let over = DefaultsStore(instance); return (DefaultsStore(suiteName: name)!, over)
      }()
      : {
        let named = DefaultsStore(suiteName: name)!; return (named, DefaultsStore(instance))
      }()
    #if os(Linux)
      // corelibs' `UserDefaults` keeps its suite's name where the library can read it.
      #expect(byName.hub === overInstance.hub)
      #expect(overInstance.suiteName == name)
    #else
      // Apple platforms: an instance does not say its suite, so its store has a hub of its own, which re-checks
      // each key other hubs write (the values below hold the same).
      #expect(byName.hub !== overInstance.hub)
      #expect(overInstance.suiteName == nil)
    #endif
    let seenByName = Recorder<Int>()
    let seenOverInstance = Recorder<Int>()
    let tokens = [
      byName.property(.count).observe { seenByName.append($0) },
      overInstance.property(.count).observe { seenOverInstance.append($0) },
    ]
    overInstance[.count] = 1
    byName[.count] = 2
    #expect(seenByName.values == [0, 1, 2])
    #expect(seenOverInstance.values == [0, 1, 2])
    withExtendedLifetime(tokens) {}
  }

  @Test func theStandardStoreAndStoresOverStandardInstancesShareOneHub() {
    #expect(DefaultsStore(UserDefaults.standard).hub === DefaultsStore.standard.hub)
    #if os(Linux)
      // A `UserDefaults()` has no suite: it is the application's own domain, as `.standard` is.
      #expect(DefaultsStore(UserDefaults()).hub === DefaultsStore.standard.hub)
    #endif
  }

  /// The standard store knows its domain (the app's bundle identifier on Apple platforms, the executable's name on
  /// Linux), so `keys` lists what it holds and `removeAll()` would reach it.
  @Test func theStandardStoreListsItsKeys() {
    let name = "standard.\(UUID().uuidString)"
    let key = DefaultsKey<Int>(name, default: 0)
    DefaultsStore.standard[key] = 7
    defer { DefaultsStore.standard.reset(key) }
    #expect(DefaultsStore.standard.keys.contains(name))
    #expect(DefaultsStore.standard.hub.suiteIsKnown)
  }

  /// Where the suite of an instance cannot be told (Apple platforms), its hub re-checks each key other hubs write.
  @Test func aHubWhoseSuiteIsUnknownSeesWritesThroughOtherStores() {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let named = DefaultsStore(suiteName: name)!
    let instance = UserDefaults(suiteName: name)!
    let unknown = DefaultsStore(hub: HubRegistry.hub(for: instance, suiteIsTold: false))
    #expect(!unknown.hub.suiteIsKnown && unknown.hub !== named.hub)
    let seenByUnknown = Recorder<Int>()
    let seenByNamed = Recorder<Int>()
    let tokens = [
      unknown.property(.count).observe { seenByUnknown.append($0) },
      named.property(.count).observe { seenByNamed.append($0) },
    ]
    named[.count] = 3
    #expect(seenByUnknown.values == [0, 3])
    // Saved first: until then a read through the named store answers from its record of its unsaved write (a plain
    // write of the same key, which is what the unknown store's is on Linux, is read once that write is saved).
    named.flush()
    unknown[.count] = 4
    #expect(seenByNamed.values == [0, 3, 4])
    withExtendedLifetime(tokens) {}
  }
}

#if os(Linux)
  @Suite struct HubLifecycleTests {
    /// Making a store checks its suite's file under the suite's lock, which another process may hold. That wait
    /// must not hold up the making of a store of another suite (hubs are built outside the registry's lock).
    @Test func aStoreWaitingForALockedSuiteDoesNotBlockAnotherSuite() async throws {
      let locked = makeSuiteName()
      defer { removeSuiteFile(locked) }
      let path = preferencesFolder.appendingPathComponent("\(locked).plist").path
      try PropertyListSerialization.data(fromPropertyList: ["count": 1], format: .xml, options: 0)
        .write(to: URL(fileURLWithPath: path))
      let descriptor = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
      try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
      let progress = Recorder<String>()
      SuiteFile.lockWaits.withLock { $0[path + ".lock"] = { progress.append("waiting") } }
      defer { _ = SuiteFile.lockWaits.withLock { $0.removeValue(forKey: path + ".lock") } }
      Thread {
        _ = DefaultsStore(suiteName: locked)
        progress.append("made")
      }.start()
      // Once that store waits for the lock, another suite's store is made at once.
      #expect(await progress.wait { $0 == ["waiting"] }, "\(progress.values)")
      #expect(await finishes(timeout: 30) { _ = DefaultsStore(suiteName: makeSuiteName()) })
      #expect(progress.values == ["waiting"])
      flock(descriptor, LOCK_UN)
      close(descriptor)
      #expect(await progress.wait { $0 == ["waiting", "made"] }, "\(progress.values)")
    }

    /// A hub dropped with unsaved writes does not save in its deinit (which may run on any thread, holding
    /// anything): it hands them to a background save, which writes them.
    @Test func aDroppedHubWithUnsavedWritesStillSavesThem() async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      weak var droppedHub: ChangeHub?
      let background: DispatchQueue
      do {
        let store = DefaultsStore(suiteName: name)!
        droppedHub = store.hub
        background = try #require(store.hub.persistence).background
        store[.count] = 41
      }
      #expect(droppedHub == nil)
      // The hand-off runs on the file's own queue: once a block queued after it has run, it has. (Before, the test
      // waited for every hand-off of the process to end, which other tests' churn never let happen.)
      let saved = try await offThePool { background.sync { true } }
      #expect(saved)
      let data = try Data(contentsOf: preferencesFolder.appendingPathComponent("\(name).plist"))
      let root = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
      #expect(root?["count"] as? Int == 41)
    }

    /// A store made while the dropped hub's background save waits for the suite's lock takes over that hub's
    /// bookkeeping: it reads the dropped hub's unsaved write, and when the background save merges another process's
    /// change into memory, this store's observers hear of it. (Before, the new hub had bookkeeping of its own over the
    /// same corelibs copy: the save merged the change for a hub that was gone and marked memory as the file, so the
    /// new hub's reload found nothing to do, and its observer never heard of the change.)
    @Test func aStoreMadeWhileTheDroppedHubSavesHearsWhatThatSaveMerged() async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      let path = preferencesFolder.appendingPathComponent("\(name).plist").path
      let first = try #require(DefaultsStore(suiteName: name))
      first[.count] = 1
      try first.save()
      // The suite's lock, held as another process would: the background save waits for it.
      let descriptor = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
      try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
      // What happens to the suite: "waits" each time a thread is about to wait for the lock, "made" once the second
      // store is made (one recorder, so that a wait can end on either).
      let progress = Recorder<String>()
      SuiteFile.lockWaits.withLock { $0[path + ".lock"] = { progress.append("waits") } }
      defer { _ = SuiteFile.lockWaits.withLock { $0.removeValue(forKey: path + ".lock") } }
      let persistence = try #require(first.hub.persistence)
      first[.count] = 2
      weak var dropped: ChangeHub?
      dropped = first.hub
      _ = consume first
      #expect(dropped == nil)
      #expect(await progress.wait { !$0.isEmpty })
      // Another process saves meanwhile (holding the lock, which it has).
      try PropertyListSerialization.data(fromPropertyList: ["count": 1, "other": 7], format: .xml, options: 0)
        .write(to: URL(fileURLWithPath: path), options: .atomic)
      // The second store is made, read and observed on a thread of its own: each may wait for the lock this test
      // holds (a read that finds the file changed reloads it), and a wait on one of the test pool's threads would
      // never end.
      let seen = Recorder<Int>()
      async let second = offThePool { () -> (DefaultsStore, DefaultsObservation, SuitePersistence?, Int)? in
        defer { progress.append("made") }
        guard let second = DefaultsStore(suiteName: name) else { return nil }
        let count = second[.count]
        let token = second.property(DefaultsKey<Int>("other", default: 0)).observe { seen.append($0) }
        return (second, token, second.hub.persistence, count)
      }
      // Released once the second store is made, or waits for the lock too (its making began while the dropped
      // hub's save was still waiting).
      // Only pacing, not a check: under the thread sanitizer the second store's making can wait on something other
      // than the lock's file (not announced by `lockWaits`); the checks below are what the test is about.
      _ = await progress.wait(timeout: 10) { $0.contains("made") || $0.filter { $0 == "waits" }.count >= 2 }
      flock(descriptor, LOCK_UN)
      close(descriptor)
      let (store, token, shared, count) = try #require(try await second)
      #expect(shared === persistence)
      #expect(count == 2)
      #expect(await seen.wait { $0.last == 7 }, "\(seen.values)")
      #expect(store[.count] == 2)
      token.cancel()
    }

    /// The suite's lock file removed while a thread of this process holds its lock (a program cleaning the folder):
    /// another thread then takes the lock of the file made anew at once, and both hold it. Neither may stop the
    /// other's nested calls from seeing that their thread holds the lock. (Before, the thread that let go of the
    /// old file cleared the mark the other had set, and that thread's next nested call waited for itself in `flock`,
    /// forever: the whole-suite runs that churned suites while removing their files hung so.)
    @Test func aLockFileRemovedWhileHeldLeavesNoThreadWaitingForItself() async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      let store = try #require(DefaultsStore(suiteName: name))
      store[.count] = 1
      try store.save()
      let record = try #require(store.hub.persistence).record
      let events = Recorder<String>()
      let newHeld = DispatchSemaphore(value: 0)
      let oldReleased = DispatchSemaphore(value: 0)
      Thread {
        try? record.locked { () throws(SaveFailure) in
          events.append("old held")
          // Bounded: a thread that holds the suite's lock forever would hold up every other test using the pool.
          _ = newHeld.wait(timeout: .now() + 30 * timeoutScale)
        }
        oldReleased.signal()
      }.start()
      #expect(await events.wait { $0.contains("old held") })
      #expect(unlink(record.file.lockPath) == 0)
      Thread {
        try? record.locked { () throws(SaveFailure) in
          newHeld.signal()
          _ = oldReleased.wait(timeout: .now() + 30 * timeoutScale)
          try record.locked { () throws(SaveFailure) in events.append("nested") }
        }
        events.append("new released")
      }.start()
      #expect(await events.wait(timeout: 30) { $0.contains("new released") }, "\(events.values)")
      #expect(events.values.contains("nested"))
    }
  }
#endif

@Suite struct InMemoryStoreTests {
  @Test func startsWithTheGivenValuesAndReportsMismatches() {
    let store = DefaultsStore.inMemory(["count": .integer(3), "volume": .string("loud")])
    let issues = Recorder<DefaultsError>()
    store.issueHandler = { issues.append($0) }
    #expect(store[.count] == 3)
    #expect(store[.volume] == 0.5)
    #expect(issues.values == [.typeMismatch(key: "volume", expected: "Double", found: "String")])
  }

  @Test func eachStoreIsNewAndIsolated() {
    let first = DefaultsStore.inMemory()
    let second = DefaultsStore.inMemory()
    first[.count] = 1
    #expect(second[.count] == 0)
    #expect(first.userDefaults.object(forKey: "count") == nil, "the store wrote to UserDefaults")
    #expect(first.suiteName == nil)
  }

  @Test func flushSaveAndRefreshDoNothingHarmful() throws {
    let store = DefaultsStore.inMemory()
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    store[.count] = 2
    store.flush()
    try store.save()
    store.refresh()
    #expect(store[.count] == 2)
    #expect(seen.values == [0, 2])
    withExtendedLifetime(token) {}
  }
}
