import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#endif

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
    ///
    /// `appSynchronizes`: the app's `UserDefaults.synchronize()` of another suite, right after the write, which on
    /// corelibs saves every suite of the process in place, the dropped hub's unsaved write with it. The whole-suite
    /// runs made that order at random (another test's plain `synchronize()` loop): it failed CI three times while this
    /// test's other process wrote the file as the test last saw it, undoing a save it had not read. The two cases run
    /// one after the other: the second's `synchronize()` saves every suite of the process, the first's too, and run
    /// side by side (as they do when this test runs alone) it landed inside the first's stand-in for another process,
    /// which reads the file and writes it back, in half the runs.
    @Test(.serialized, arguments: [false, true])
    func aStoreMadeWhileTheDroppedHubSavesHearsWhatThatSaveMerged(appSynchronizes: Bool) async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      let path = preferencesFolder.appendingPathComponent("\(name).plist").path
      let first = try #require(DefaultsStore(suiteName: name))
      first[.count] = 1
      try first.save()
      // The suite's lock, held as another process would: the background save waits for it.
      let descriptor = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
      try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
      // Let go on every path (a failed check left the lock held, and the process's save at exit waited for it).
      defer { close(descriptor) }
      // What happens to the suite: "waits" each time a thread is about to wait for the lock, "made" once the second
      // store is made (one recorder, so that a wait can end on either).
      let progress = Recorder<String>()
      SuiteFile.lockWaits.withLock { $0[path + ".lock"] = { progress.append("waits") } }
      defer { _ = SuiteFile.lockWaits.withLock { $0.removeValue(forKey: path + ".lock") } }
      let persistence = try #require(first.hub.persistence)
      first[.count] = 2
      if appSynchronizes { _ = UserDefaults(suiteName: makeSuiteName() + ".app")?.synchronize() }
      weak var dropped: ChangeHub?
      dropped = first.hub
      _ = consume first
      #expect(dropped == nil)
      #expect(await progress.wait { !$0.isEmpty })
      // Another process saves meanwhile (holding the lock, which it has): its write of `other`, into what the file
      // holds (an app's `synchronize()` may have saved the dropped hub's 2 there; else it holds the 1 saved above).
      // (Read as a process of the library's reads: corelibs' in-place save of an app's `synchronize()` may be under
      // way, and takes no lock.)
      var onDisk = try #require(try SuiteFile(suiteName: name).savedEntries())
      onDisk["other"] = .integer(7)
      try PropertyListSerialization.data(
        fromPropertyList: PropertyListValue.dictionary(onDisk).foundationObject, format: .xml, options: 0
      ).write(to: URL(fileURLWithPath: path), options: .atomic)
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
      let (store, token, shared, count) = try #require(try await second)
      #expect(shared === persistence)
      #expect(count == 2)
      #expect(await seen.wait { $0.last == 7 }, "\(seen.values)")
      #expect(store[.count] == 2)
      token.cancel()
    }

    /// A store of the suite `name`, saved once (its lock file exists), and its persistence, for the lock tests.
    private func savedSuite(_ name: String) throws -> (DefaultsStore, SuitePersistence) {
      let store = try #require(DefaultsStore(suiteName: name))
      store[.count] = 1
      try store.save()
      return (store, try #require(store.hub.persistence))
    }

    /// The suite's lock file removed while a thread of this process holds its lock (a program cleaning the folder):
    /// another thread then takes the lock of the file made anew at once, and both hold it. Neither may stop the
    /// other's nested calls from seeing that their thread holds the lock. (Before, the thread that let go of the
    /// old file cleared the mark the other had set, and that thread's next nested call waited for itself in `flock`,
    /// forever: the whole-suite runs that churned suites while removing their files hung so.)
    @Test func aLockFileRemovedWhileHeldLeavesNoThreadWaitingForItself() async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      let (store, persistence) = try savedSuite(name)
      defer { withExtendedLifetime(store) {} }
      let record = persistence.record
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

    /// The same, the other way round: the thread that held the removed file's lock makes a nested call while the
    /// other holds the new file's. It runs at once. (Before, the record kept one owner, and the second thread's mark
    /// hid the first's: the first then waited in `flock` for the second, which in a save waited for the first's write
    /// gate, forever; the benchmark hung at exit so, after its clean-up removed a synced suite's lock file during the
    /// sync's edit.)
    @Test func aThreadThatHeldARemovedLockFileStillSeesItHoldsTheLock() async throws {
      let name = makeSuiteName()
      defer { removeSuiteFile(name) }
      let (store, persistence) = try savedSuite(name)
      defer { withExtendedLifetime(store) {} }
      let record = persistence.record
      let events = Recorder<String>()
      let newHeld = DispatchSemaphore(value: 0)
      let oldDone = DispatchSemaphore(value: 0)
      Thread {
        try? record.locked { () throws(SaveFailure) in
          events.append("old held")
          _ = newHeld.wait(timeout: .now() + 30 * timeoutScale)
          try record.locked { () throws(SaveFailure) in events.append("nested in old") }
        }
        oldDone.signal()
      }.start()
      #expect(await events.wait { $0.contains("old held") })
      #expect(unlink(record.file.lockPath) == 0)
      Thread {
        try? record.locked { () throws(SaveFailure) in
          events.append("new held")
          newHeld.signal()
          // Bounded: the old thread's nested call, run at once, lets this end long before.
          _ = oldDone.wait(timeout: .now() + 60 * timeoutScale)
        }
        events.append("new released")
      }.start()
      #expect(await events.wait(timeout: 20) { $0.contains("nested in old") }, "\(events.values)")
      #expect(await events.wait(timeout: 30) { $0.contains("new released") }, "\(events.values)")
    }
  }
#endif
