import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

// Compiled on Linux only: these tests call corelibs' preferences directly (CorelibsPreferences), which Apple's
// Foundation does not have.
#if os(Linux)
  // One test at a time: the plain `synchronize()` loop below saves every suite of the process with unsaved writes, in
  // place, and one landing inside aFileRemovedDuringASaveReachesTheObservers' window (a write, then another process's
  // `rm`) would save the write before the removal, which that test's expectations do not allow for.
  @Suite(.linuxOnly, .serialized) struct SynchronizeDuringSaveTests {
    /// A write of ours after corelibs' save had been read back, then a plain `synchronize()` on another thread (of any
    /// suite: corelibs then saves every domain of the process) before the save renamed its journal: corelibs wrote that
    /// write into the file in place and counted it saved; the rename then replaced that file with the journal, which
    /// lacked it. corelibs' copy held a value no file held, as saved; the next save had corelibs drop that copy, and a
    /// read meanwhile loaded the file: the value went back to the one before (found under the thread sanitizer, where
    /// an observer saw a writer's values go backwards). A write now waits for the save's commit (and the save keeps a
    /// file that holds every write of ours, read again if it changed since the read-back).
    @Test func aWriteSavedInPlaceDuringASaveIsNotLost() async throws {
      let (store, issues) = makeStore(.suite)
      let path = try #require(store.hub.persistence?.file.path)
      let name = try #require(store.suiteName)
      let key = DefaultsKey<Int>("k", default: 0)
      store[key] = 1
      try store.save()
      let raced = Recorder<Bool>()
      // What memory holds (read as the store reads, but without looking at the file: a reload would save, inside this
      // save).
      let readsInLaterSaves = Recorder<PropertyListValue?>()
      TrackedFile.saveSteps.withLock { hooks in
        hooks[path] = { step in
          if raced.count > 0 {
            if step == .afterCorelibsSave { readsInLaterSaves.append(store.hub.stored(forKey: "k")) }
            return
          }
          guard step == .afterReadBack else { return }
          // Until the write and the synchronize are done, or the write waits for this save.
          let doneOrWaiting = DispatchSemaphore(value: 0)
          store.hub.gate.waitStarted.withLock { $0 = { doneOrWaiting.signal() } }
          Thread {
            store[key] = 2
            _ = CorelibsPreferences.synchronize(domain: name)
            raced.append(true)
            doneOrWaiting.signal()
          }.start()
          _ = doneOrWaiting.wait(timeout: .now() + 10 * timeoutScale)
          store.hub.gate.waitStarted.withLock { $0 = nil }
        }
      }
      defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
      store[DefaultsKey<Int>("a", default: 0)] = 1
      try await offThePool { try store.save() }
      #expect(await raced.wait(timeout: 10) { !$0.isEmpty })
      try await offThePool { try store.save() }
      #expect(readsInLaterSaves.count > 0)
      #expect(readsInLaterSaves.values.allSatisfy { $0 == .integer(2) }, "\(readsInLaterSaves.values)")
      #expect(store[key] == 2)
      let saved = try #require(suiteFileBytes(name))
      let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
      #expect(domain?["k"] as? Int == 2)
      #expect(issues.values.isEmpty)
    }
  }

  extension SynchronizeDuringSaveTests {
    /// A plain `UserDefaults` write of this process, saved in place by a plain `synchronize()` on another thread after
    /// the save had read corelibs' file back (it equalled the journal) and before it committed: the save renamed its
    /// journal, which lacked the write, over that file, and corelibs counted the write saved; once its copy was
    /// dropped, reads went back to the older value (found under the thread sanitizer: a plain write of 4 read as 2).
    /// The save now keeps corelibs' file whenever it holds every write of ours, and reads it again if it changed.
    @Test func aPlainWriteSavedInPlaceAfterTheReadBackIsNotLost() async throws {
      let (store, issues) = makeStore(.suite)
      let path = try #require(store.hub.persistence?.file.path)
      let name = try #require(store.suiteName)
      let a = DefaultsKey<Int>("a", default: 0)
      let other = DefaultsKey<Int>("other", default: 0)
      store[a] = 1
      store.userDefaults.set(2, forKey: "other")
      try await offThePool { try store.save() }
      let raced = Recorder<Bool>()
      TrackedFile.saveSteps.withLock { hooks in
        hooks[path] = { step in
          guard step == .afterReadBack, raced.count == 0 else { return }
          raced.append(true)
          store.userDefaults.set(4, forKey: "other")
          _ = CorelibsPreferences.synchronize(domain: name)
        }
      }
      defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
      store[a] = 2
      try await offThePool { try store.save() }
      #expect(raced.values == [true])
      // A save with nothing unsaved drops corelibs' copy: reads load the file.
      try await offThePool { try store.save() }
      #expect(store[other] == 4)
      let saved = try #require(suiteFileBytes(name))
      let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
      #expect(domain?["other"] as? Int == 4)
      #expect(domain?["a"] as? Int == 2)
      #expect(issues.values.isEmpty)
    }

    /// A plain `rm` of the suite's file (a writer that takes no lock) right after a save that kept corelibs' file,
    /// before it was flushed: the save reported that it could not open the file (history checker, seeds 500466466 and
    /// 500466661). The save happened, then the removal: no issue, reads give the defaults, the observer hears it.
    @Test func aFileRemovedBeforeTheSaveFlushesItIsARemovalNotAFailure() async throws {
      let (store, issues) = makeStore(.suite)
      let path = try #require(store.hub.persistence?.file.path)
      let key = DefaultsKey<Int>("k", default: 0)
      store[key] = 1
      try await offThePool { try store.save() }
      let seen = Recorder<Int>()
      let observation = store.observe(key) { seen.append($0) }
      defer { observation.cancel() }
      #expect(await seen.wait(timeout: 10) { $0 == [1] })
      let removed = try await removingFile(path, at: .beforeFlush) {
        store[key] = 2
        try await offThePool { try store.save() }
      }
      #expect(removed == [true])
      #expect(issues.values.isEmpty, "\(issues.values)")
      #expect(await seen.wait(timeout: 10) { $0.last == 0 }, "\(seen.values)")
      #expect(store[key] == 0)
      #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A plain `rm` of the suite's file during a save: between its check of the file and the stamp it works from
    /// (`afterCheck`), or after its journal is written, before corelibs saves (`beforeCorelibsSave`: corelibs saves its
    /// dirty keys into the missing file, and the save keeps that file). The file then lacks the removed key, reads
    /// give its default, and so must the observer, which only waits. (Before, the save reported no change elsewhere:
    /// the observer kept the removed value until the next change of the key; history checker, seed 200267.)
    @Test(arguments: [TrackedFile.SaveStep.afterCheck, .beforeCorelibsSave])
    func aFileRemovedDuringASaveReachesTheObservers(at removal: TrackedFile.SaveStep) async throws {
      let (store, issues) = makeStore(.suite)
      let path = try #require(store.hub.persistence?.file.path)
      let key = DefaultsKey<Int>("k", default: 0)
      let other = DefaultsKey<Int>("other", default: 0)
      store[key] = 1
      try await offThePool { try store.save() }
      let seen = Recorder<Int>()
      let observation = store.observe(key) { seen.append($0) }
      defer { observation.cancel() }
      #expect(await seen.wait(timeout: 10) { $0 == [1] })
      let removed = try await removingFile(path, at: removal) {
        store[other] = 2
        try await offThePool { try store.save() }
      }
      #expect(removed == [true])
      #expect(await seen.wait(timeout: 10) { $0.last == 0 }, "\(seen.values)")
      #expect(store[key] == 0)
      #expect(store[other] == 2)
      let saved = try #require(suiteFileBytes(store.suiteName!))
      let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
      #expect(domain?["k"] == nil)
      #expect(domain?["other"] as? Int == 2)
      #expect(issues.values.isEmpty, "\(issues.values)")
    }

    /// Plain `synchronize()` calls (of another suite: corelibs then saves every domain of the process, each in place)
    /// and `removePersistentDomain(forName:)` in a loop, beside threads that write and at once read back, while the
    /// store's own saves run: a read right after a write of the same thread returns that write, by plain and by
    /// exactly compared key names, whether it reads the suite's own domain (right after a write) or corelibs' merged
    /// view (after many reads). A stale read of this kind showed up once each in whole-suite runs (URLTests,
    /// KeyNameTests, StorePairingTests) while BadDataTests removed domains.
    @Test func readsAfterWritesStayTheirsWhileTheProcessSynchronizes() async throws {
      let (store, issues) = makeStore(.suite)
      let other = makeSuiteName()
      defer { UserDefaults(suiteName: other)?.removePersistentDomain(forName: other) }
      let writing = Locked(3)
      let stale = Recorder<String>()
      let names = ["plain", "a;b", "a\u{37E}b"]
      let keys = names.map { DefaultsKey<Int>($0, default: -1) }
      await onThreadsOfTheirOwn(4) { thread in
        guard thread < 3 else {
          let defaults = UserDefaults(suiteName: other)!
          var round = 0
          // Bounded too: each call saves every domain of the process, which every other test running meanwhile waits
          // for (under the thread sanitizer an unbounded loop slowed the suite past other tests' time limits).
          while writing.withLock({ $0 }) > 0 && round < 400 {
            round += 1
            defaults.set(round, forKey: "round")
            if round.isMultiple(of: 8) {
              defaults.removePersistentDomain(forName: other)
            } else {
              defaults.synchronize()
            }
          }
          return
        }
        let key = keys[thread]
        let name = names[thread].unicodeScalars.map { "\($0.value)" }.joined(separator: ".")
        for value in 0..<500 {
          store[key] = value
          if store[key] != value { stale.append("\(name) \(value): read \(store[key]) right after") }
          if value.isMultiple(of: 100) {
            // And reads far from the write.
            for _ in 0..<72 {
              if store[key] != value {
                stale.append("\(name) \(value): read \(store[key]) far from the write")
                break
              }
            }
          }
        }
        writing.withLock { $0 -= 1 }
      }
      #expect(stale.values.isEmpty, "\(stale.values.prefix(8))")
      try await offThePool { try store.save() }
      for (thread, key) in keys.enumerated() { #expect(store[key] == 499, "key \(thread)") }
      #expect(issues.values.isEmpty)
    }
  }
#endif
