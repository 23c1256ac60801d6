import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// A Codable value with no stored form: JSON has no NaN.
private struct NotANumber: DefaultsCodable {
  var value = Double.nan
}

/// The bytes of a suite's plist, or nil when it has none. Linux only (the library writes the file there; on Apple
/// platforms the preferences daemon does, when it likes): a test that reads it is `.linuxOnly`.
func suiteFileBytes(_ suiteName: String) -> Data? {
  if !isLinux { Issue.record("suiteFileBytes reads the file the library writes on Linux: make the test .linuxOnly") }
  return try? Data(contentsOf: preferencesFolder.appendingPathComponent("\(suiteName).plist"))
}

// A deadlock would hang, not fail: each test is bounded (longer where every wait is: under the thread sanitizer, where
// eight threads saving thousands of times took close to two minutes in a loaded run).
@Suite(.timeLimit(.minutes(2 * Int(timeoutScale)))) struct TransactionTests {
  /// Eight threads each add 1 a thousand times: every update counts.
  @Test(arguments: Storage.allCases) func eightThreadsIncrementingLoseNoUpdate(_ storage: Storage) async throws {
    let (store, issues) = makeStore(storage)
    let failures = Recorder<String>()
    // On threads of their own: eight threads saving thousands of times (each waiting for the suite's lock) must
    // hold neither the test pool's threads nor Dispatch's.
    await onThreadsOfTheirOwn(8) { _ in
      let count = store.property(.count)
      for _ in 0..<1000 {
        do { try count.update { $0 += 1 } } catch { failures.append("\(error)") }
      }
    }
    #expect(failures.values.isEmpty)
    #expect(store[.count] == 8000)
    #expect(issues.values.isEmpty)
    if storage == .suite, isLinux {
      // Each update was saved before its lock was released.
      let saved = try #require(suiteFileBytes(store.suiteName!))
      let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
      #expect(domain?["count"] as? Int == 8000)
    }
  }

  @Test(arguments: Storage.allCases) func theBodySeesItsOwnWritesAndItsResultIsReturned(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store[.count] = 40
    let result = try store.edit { tx in
      tx[.count] += 1
      tx[.count] += 1
      tx[.name] = "n\(tx[.count])"
      tx.reset(.volume)
      return tx[.name] + "/\(tx[.volume])"
    }
    #expect(result == "n42/0.5")
    #expect(store[.count] == 42)
    #expect(store[.name] == "n42")
    #expect(try store.property(.count).update { $0 *= 2 } == 84)
  }

  /// A body that throws writes nothing: the values and the observers are as before (the file too:
  /// ``aThrowingBodyLeavesTheSuiteFileAsItWas()``).
  @Test(arguments: Storage.allCases) func aThrowingBodyWritesNothing(_ storage: Storage) throws {
    struct Refused: Error {}
    let (store, _) = makeStore(storage)
    store[.count] = 1
    store.flush()
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    #expect(throws: Refused.self) {
      try store.edit { tx in
        tx[.count] = 2
        tx[.name] = "written?"
        throw Refused()
      }
    }
    #expect(throws: Refused.self) { try store.property(.count).update { _ in throw Refused() } }
    #expect(store[.count] == 1)
    #expect(store[.name] == "")
    #expect(seen.values == [1])
    token.cancel()
  }

  /// A body that throws leaves the suite's file byte for byte as it was (Linux, where the library writes it).
  @Test(.linuxOnly) func aThrowingBodyLeavesTheSuiteFileAsItWas() throws {
    struct Refused: Error {}
    let (store, _) = makeStore(.suite)
    store[.count] = 1
    store.flush()
    let name = try #require(store.suiteName)
    let before = try #require(suiteFileBytes(name))
    #expect(throws: Refused.self) {
      try store.edit { tx in
        tx[.count] = 2
        throw Refused()
      }
    }
    #expect(throws: Refused.self) { try store.property(.count).update { _ in throw Refused() } }
    store.flush()
    #expect(suiteFileBytes(name) == before)
  }

  /// A write without a stored form makes the whole edit fail, with the encoding error.
  @Test(arguments: Storage.allCases) func aWriteThatCannotBeEncodedWritesNothing(_ storage: Storage) {
    let (store, _) = makeStore(storage)
    let broken = DefaultsKey<NotANumber?>("broken")
    #expect {
      try store.edit { tx in
        tx[.count] = 5
        tx[broken] = NotANumber()
      }
    } throws: { error in
      guard case .encodingFailed(let key, _, _)? = error as? DefaultsError else { return false }
      return key == "broken"
    }
    #expect(store[.count] == 0)
    #expect(throws: DefaultsError.invalidKey("")) {
      try store.edit { tx in
        tx[.count] = 5
        tx.reset(DefaultsKey<Int>("", default: 0))
      }
    }
    #expect(store[.count] == 0)
  }

  /// Observers hear of each changed key once per edit, with its final value, and of unchanged keys never.
  @Test(arguments: Storage.allCases) func observersHearEachKeyOncePerEdit(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store[.name] = "same"
    let counts = Recorder<Int>()
    let names = Recorder<String>()
    let tokens = [
      store.property(.count).observe { counts.append($0) }, store.property(.name).observe { names.append($0) },
    ]
    try store.edit { tx in
      tx[.count] = 1
      tx[.count] = 2
      tx[.name] = "other"
      tx[.name] = "same"
      tx[.count] += 1
    }
    try store.edit { tx in tx[.count] = 3 }
    #expect(counts.values == [0, 3])
    #expect(names.values == ["same"])
    tokens.forEach { $0.cancel() }
  }

  /// An edit inside an edit of the same suite would wait for itself: it throws, naming the suite, and the outer
  /// edit goes on. An edit of another suite inside the body is fine.
  @Test(arguments: Storage.allCases) func aReentrantEditThrowsNamingTheSuite(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    let (other, _) = makeStore(.suite)
    let suite = store.suiteName ?? "an in-memory suite"
    let sameSuite = store.suiteName.flatMap(DefaultsStore.init(suiteName:)) ?? store
    try store.edit { tx in
      tx[.count] = 1
      #expect(throws: DefaultsError.reentrantEdit(suite: suite)) { try store.edit { tx in tx[.count] = 2 } }
      #expect(throws: DefaultsError.reentrantEdit(suite: suite)) { try sameSuite.property(.count).update { $0 = 3 } }
      try other.edit { inner in inner[.count] = 7 }
    }
    #expect(store[.count] == 1)
    #expect(other[.count] == 7)
    #expect(DefaultsError.reentrantEdit(suite: suite).description.contains(suite))
  }

  /// Observers are called after the edit's locks: one may edit the suite again.
  @Test(arguments: Storage.allCases) func anObserverMayEditTheSuite(_ storage: Storage) throws {
    let (store, issues) = makeStore(storage)
    let token = store.property(.count).observe(initial: false) { count in
      guard count < 5 else { return }
      do { try store.property(.count).update { $0 += 1 } } catch { issues.append(.invalidKey("\(error)")) }
    }
    try store.property(.count).update { $0 += 1 }
    #expect(store[.count] == 5)
    #expect(issues.values.isEmpty)
    token.cancel()
  }

  /// A type mismatch read in a body is told to the issue handler after the edit's locks: a handler that waits for
  /// another thread's edit of the same suite does not deadlock.
  @Test(arguments: Storage.allCases) func issuesAreToldAfterTheLocks(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store[.name] = "text"
    let told = Recorder<DefaultsError>()
    store.issueHandler = { issue in
      // Another thread edits the suite, and this one waits for it.
      DispatchQueue.global().sync {
        do { try store.property(.count).update { $0 += 1 } } catch { told.append(.invalidKey("\(error)")) }
      }
      told.append(issue)
    }
    let read = try store.edit { tx in tx[DefaultsKey<Int>("name", default: -1)] }
    #expect(read == -1)
    #expect(told.values == [.typeMismatch(key: "name", expected: "Int", found: "String")])
    #expect(store[.count] == 1)
  }

  /// Saving inside a body (`flush()` takes the suite's lock, which the edit holds) does not wait for itself.
  @Test func aFlushInsideTheBodyDoesNotDeadlock() throws {
    let (store, issues) = makeStore(.suite)
    try store.edit { tx in
      tx[.count] = 1
      store[.name] = "plain"
      store.flush()
    }
    #expect(store[.count] == 1)
    #expect(store[.name] == "plain")
    #expect(issues.values.isEmpty)
  }

  /// A save that fails undoes the edit: the values in memory are as before, observers hear nothing, and nothing is
  /// left pending to be saved later over another process's values.
  @Test(.linuxOnly) func aFailedSaveUndoesTheEdit() throws {
    // `<name>.plist.lock` fits in a file name (255 bytes), `<name>.plist.journal` does not: the lock is taken, the
    // save fails.
    let name = "ReactiveDefaultsTests.failedSave." + String(repeating: "x", count: 243 - 33)
    #expect(name.utf8.count == 243)
    let store = try #require(DefaultsStore(suiteName: name))
    defer { try? FileManager.default.removeItem(at: preferencesFolder.appendingPathComponent("\(name).plist.lock")) }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    #expect {
      try store.property(.count).update { $0 += 1 }
    } throws: { error in
      guard case .saveFailed(_, let reason)? = error as? DefaultsError else { return false }
      return reason.contains("File name too long")
    }
    #expect(store[.count] == 0)
    #expect(seen.values == [0])
    // Nothing is left in memory to be saved later, over what another process may save meanwhile.
    #expect(store.hub.persistence?.unsavedWrites.isEmpty == true)
    #expect(store.userDefaults.persistentDomain(forName: name)?["count"] == nil)
    token.cancel()
  }

  /// A save that waits for the suite's lock while an edit holds it must not save, after the edit, the values it would
  /// have taken before: the edit's newer value of the same key would be lost. (Seen under the sanitizer: a coalesced
  /// save of `count = 40` waited behind the edit that made it 42, then wrote 40 back.) The edit goes on only once the
  /// saver is about to wait for the lock (`SuiteFile.lockWaits`), so the order is the losing one every time.
  @Test(.linuxOnly) func aSaveWaitingBehindAnEditDoesNotWriteOlderValuesOverIt() async throws {
    let (store, issues) = makeStore(.suite)
    let lockPath = try #require(store.hub.persistence?.file.lockPath)
    store[.count] = 40
    let editing = DispatchSemaphore(value: 0)
    let saverWaits = DispatchSemaphore(value: 0)
    SuiteFile.lockWaits.withLock { $0[lockPath] = { saverWaits.signal() } }
    defer { _ = SuiteFile.lockWaits.withLock { $0.removeValue(forKey: lockPath) } }
    let waited = Recorder<Bool>()
    await onThreadsOfTheirOwn(2) { index in
      if index == 0 {
        _ = try? store.edit { tx in
          editing.signal()
          waited.append(saverWaits.wait(timeout: .now() + 10 * timeoutScale) == .success)
          tx[.count] = 42
        }
      } else {
        editing.wait()
        store.flush()
      }
    }
    #expect(waited.values == [true])
    #expect(store[.count] == 42)
    let saved = try #require(suiteFileBytes(store.suiteName!))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["count"] as? Int == 42)
    #expect(issues.values.isEmpty)
  }

  /// A removal of a key this process's corelibs copy does not hold, made again while a save of the first one runs
  /// (after the save took it, before corelibs saved), where another process had given the file that key: corelibs
  /// records neither removal, so the save kept corelibs' file, key included, for the newer write to save; and the
  /// next save built its content from corelibs' copy, key included, leaving the writes out. The removal never reached
  /// the file. (Found by the history checker, seed 352169229; the test writes at the moment the checker's run did.)
  @Test(.linuxOnly) func aRemovalRepeatedDuringASaveReachesTheFile() async throws {
    let (store, issues) = makeStore(.suite)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    store[DefaultsKey<Int>("a", default: 0)] = 1
    try store.save()
    // Another process's save gives the suite `k`; this process has not reloaded it.
    try SuiteFile.encode(["a": .integer(1), "k": .integer(7)]).write(to: URL(fileURLWithPath: path), options: .atomic)
    store.reset(key)
    let repeated = Recorder<Bool>()
    SuiteFileRecord.saveSteps.withLock { hooks in
      hooks[path] = { step in
        guard step == .beforeCorelibsSave, repeated.count == 0 else { return }
        repeated.append(true)
        store.reset(key)
      }
    }
    defer { _ = SuiteFileRecord.saveSteps.withLock { $0.removeValue(forKey: path) } }
    // Something for corelibs to save: its save then reloads the file (the other process's `k` included) and
    // rewrites it in place.
    store[DefaultsKey<Int>("b", default: 0)] = 2
    try await offThePool { try store.save() }
    #expect(repeated.values == [true])
    // The first save already leaves the removal in the file: a write made during a save replaces the save's own
    // write of its key (before, a key written again was left as corelibs saved it, so this save wrote back the other
    // process's value, and only the next save removed it; history checker, seed 700008733).
    let first = try #require(suiteFileBytes(store.suiteName!))
    #expect((try PropertyListSerialization.propertyList(from: first, format: nil) as? [String: Any])?["k"] == nil)
    #expect(store[key] == -1)
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(store.suiteName!))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] == nil)
    #expect(domain?["a"] as? Int == 1)
    #expect(store[key] == -1)
    #expect(issues.values.isEmpty)
  }
}

// Compiled on Linux only: these tests call corelibs' preferences directly (CorelibsPreferences), which Apple's
// Foundation does not have.
#if os(Linux)
  @Suite(.linuxOnly) struct SynchronizeDuringSaveTests {
    /// A write of ours after corelibs' save had been read back, then a plain `synchronize()` on another thread (of any
    /// suite: corelibs then saves every domain of the process) before the save renamed its journal: corelibs wrote that
    /// write into the file in place and counted it saved; the rename then replaced that file with the journal, which
    /// lacked it. corelibs' copy held a value no file held, as saved; the next save had corelibs drop that copy, and a read
    /// meanwhile loaded the file: the value went back to the one before (found under the thread sanitizer, where an
    /// observer saw a writer's values go backwards). A write now waits for the save's commit (and the save keeps a file
    /// that holds every write of ours, read again if it changed since the read-back).
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
      SuiteFileRecord.saveSteps.withLock { hooks in
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
      defer { _ = SuiteFileRecord.saveSteps.withLock { $0.removeValue(forKey: path) } }
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
      SuiteFileRecord.saveSteps.withLock { hooks in
        hooks[path] = { step in
          guard step == .afterReadBack, raced.count == 0 else { return }
          raced.append(true)
          store.userDefaults.set(4, forKey: "other")
          _ = CorelibsPreferences.synchronize(domain: name)
        }
      }
      defer { _ = SuiteFileRecord.saveSteps.withLock { $0.removeValue(forKey: path) } }
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

    /// A plain `rm` of the suite's file (a writer that takes no lock) right after a save that kept corelibs' file, before
    /// it was flushed: the save reported that it could not open the file (history checker, seeds 500466466 and
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
    @Test(arguments: [SuiteFileRecord.SaveStep.afterCheck, .beforeCorelibsSave])
    func aFileRemovedDuringASaveReachesTheObservers(at removal: SuiteFileRecord.SaveStep) async throws {
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
            // Past the direct reads: corelibs' merged view.
            for _ in 0..<(UserDefaultsStorage.directReadsAfterWrite + 8) {
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

@Suite(.linuxOnly) struct WritesDuringASaveTests {
  /// A save whose merge drops corelibs' copy tells the observers what the copy held that the file does not: a
  /// removal of ours corelibs had not recorded (its copy lacked the key then), over a plain `UserDefaults` write of
  /// the key an observer had heard through `refresh()`. The save writes the removal into the file and reloads the
  /// copy; before, its observers kept the copy's value until the key's next change (history checker, seed
  /// 700008733, where the copy got the key from another process's file).
  @Test func observersHearWhatAMergeThatDropsTheCopyChanged() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let key = DefaultsKey<Int>("k", default: -1)
    store[DefaultsKey<Int>("a", default: 0)] = 1
    try await offThePool { try store.save() }
    let seen = Recorder<Int>()
    let token = store.property(key).observe { seen.append($0) }
    store.reset(key)  // corelibs' copy lacks `k`: it records nothing
    UserDefaults(suiteName: name)!.set(7, forKey: "k")
    store.refresh()
    // The removal is unsaved: reads, and so `refresh()`, answer from it, not from corelibs' copy (which holds 7).
    #expect(seen.values == [-1])
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    #expect((try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any])?["k"] == nil)
    #expect(store[key] == -1)
    #expect(await seen.wait { $0.last == -1 }, "\(seen.values)")
    #expect(issues.values.isEmpty)
    withExtendedLifetime(token) {}
  }

  /// A write of ours made after a save took its writes and before corelibs saved: corelibs' file holds it and every
  /// write of the save, so the save keeps that file (same inode: no rename, so writes need not wait for one) and
  /// removes its journal. The file is stamped anew to the nanosecond, as a journal is: corelibs' in-place write bears
  /// the file system's coarse time, and another process's next in-place save of the same size in the same tick would
  /// read as this one.
  @Test func aSaveKeepsCorelibsFileWhenItHoldsEveryWrite() async throws {
    let (store, issues) = makeStore(.suite)
    let path = try #require(store.hub.persistence?.file.path)
    let file = try #require(store.hub.persistence?.file)
    let key = DefaultsKey<Int>("k", default: 0)
    store[key] = 1
    try store.save()
    // The file as corelibs wrote it in the first save, then as that save left it (seen when the next save begins:
    // the timer's save of the write made during the first may come first, or the test's).
    let stamps = Recorder<SuiteFile.Stamp?>()
    SuiteFileRecord.saveSteps.withLock { hooks in
      hooks[path] = { step in
        switch (step, stamps.count) {
        case (.beforeCorelibsSave, 0): store[key] = 3
        case (.afterCorelibsSave, 0), (.beforeCorelibsSave, 1): stamps.append(file.stamp())
        default: break
        }
      }
    }
    defer { _ = SuiteFileRecord.saveSteps.withLock { $0.removeValue(forKey: path) } }
    store[key] = 2
    try await offThePool { try store.save() }
    try await offThePool { try store.save() }
    #expect(await stamps.wait(timeout: 10) { $0.count == 2 })
    let written = try #require(stamps.values.first ?? nil)
    let left = try #require(stamps.values.last ?? nil)
    #expect(left.inode == written.inode)
    #expect(left.modified != written.modified || left.modifiedNanoseconds != written.modifiedNanoseconds)
    let saved = try #require(suiteFileBytes(store.suiteName!))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil)
    #expect((domain as? [String: Any])?["k"] as? Int == 3)
    #expect(!FileManager.default.fileExists(atPath: file.journalPath))
    #expect(store[key] == 3)
    #expect(issues.values.isEmpty)
  }
}
