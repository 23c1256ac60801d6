import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#endif

/// One process, one truth, in every order a save can meet: writes of the library's and plain `UserDefaults` writes
/// (and removals, and the app's own `synchronize()`) made while a save runs (after it took the library's writes,
/// before corelibs saves), and after it, before the next. Whatever the order, the last write of the process is what
/// the store reads at once, what it reads after the saves, what the file holds and what an observer hears.
@Suite(.linuxOnly) struct PlainWritesAroundSavesTests {
  enum Step: Sendable, CustomStringConvertible {
    /// `store[key] = value`
    case ours(Int)
    /// `store.reset(key)`
    case oursRemove
    /// `UserDefaults(suiteName:).set(value, forKey:)`
    case plain(Int)
    case plainRemove
    /// The app's `UserDefaults.synchronize()`, of this suite alone: corelibs' own saves every suite of the process in
    /// place, which would reach into the other tests of this process (a suite whose lock a test holds).
    case plainSynchronize

    var description: String {
      switch self {
      case .ours(let value): "ours \(value)"
      case .oursRemove: "our removal"
      case .plain(let value): "plain \(value)"
      case .plainRemove: "plain removal"
      case .plainSynchronize: "plain synchronize()"
      }
    }
  }

  struct Order: Sendable, CustomTestStringConvertible {
    /// Run after the write of ours (5) that the first save takes, before that save. With such steps the suite also
    /// holds another key: corelibs removes the file of a suite it holds empty, and then has no file to merge with.
    var before: [Step] = []
    /// Run by the saving thread once the first save took the library's writes, before corelibs saves.
    var during: [Step]
    /// Run once that save returned, before the second.
    var after: [Step]
    /// The value the process's last write left (nil: none, the key reads its default).
    var last: Int?

    var testDescription: String {
      (before.isEmpty ? "" : "before the save \(before), ") + "during it \(during), after it \(after)"
    }
  }

  static let orders: [Order] = [
    Order(during: [.ours(1), .plain(2)], after: [], last: 2),
    Order(during: [.plain(2), .ours(1)], after: [], last: 1),
    Order(during: [.ours(1)], after: [.plain(2)], last: 2),
    Order(during: [], after: [.plain(2)], last: 2),
    Order(during: [.ours(1)], after: [.plainSynchronize, .plain(2)], last: 2),
    Order(during: [.ours(1)], after: [.plainSynchronize, .plainSynchronize], last: 1),
    Order(during: [.ours(1), .plainRemove], after: [], last: nil),
    Order(during: [.ours(1)], after: [.plainRemove], last: nil),
    Order(during: [.ours(1)], after: [.plain(2), .ours(3)], last: 3),
    Order(during: [.plain(2)], after: [.ours(1), .plain(4)], last: 4),
    // The save takes the plain write in the place of our removal; the plain removal after it leaves the copy as our
    // removal had (no object), and is the process's last write (the checker's plainThreads kind, seed 271842565:
    // the plain write was merged over corelibs' file, which held the removal).
    Order(before: [.oursRemove, .plain(2)], during: [.plainRemove], after: [], last: nil),
    Order(before: [.oursRemove, .plain(2)], during: [], after: [.plainRemove], last: nil),
  ]

  @Test(arguments: orders) func theLastWriteOfTheProcessWins(_ order: Order) async throws {
    // A background save (50 ms after a write) that reaches corelibs' save before the order's steps before the save
    // are all made runs another order (under load, in a whole-suite run): the order is tried again on a new suite.
    for _ in 0..<5 where try await lastWriteWins(order) { return }
    Issue.record("a background save came before the order's steps before the save were made, five times")
  }

  /// Runs `order` on a new suite and checks it; false when a save came before the steps before the save were made.
  private func lastWriteWins(_ order: Order) async throws -> Bool {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    let raw = try #require(UserDefaults(suiteName: name))
    // A new plain instance for each step: any instance over the suite is the suite.
    @Sendable func run(_ step: Step) {
      guard let raw = UserDefaults(suiteName: name) else { return }
      switch step {
      case .ours(let value): store[key] = value
      case .oursRemove: store.reset(key)
      case .plain(let value): raw.set(value, forKey: "k")
      case .plainRemove: raw.removeObject(forKey: "k")
      case .plainSynchronize:
        #if os(Linux)
          _ = CorelibsPreferences.synchronize(domain: name)
        #else
          _ = raw.synchronize()
        #endif
      }
    }
    store[key] = 0
    if !order.before.isEmpty { store[DefaultsKey<Int>("other", default: 0)] = 1 }
    try store.save()
    let seen = Recorder<Int>()
    let token = store.property(key).observe { seen.append($0) }
    defer { token.cancel() }
    let ran = Recorder<Int>()
    // The steps during the save run in the first save that took its writes once armed: at once, or once the steps
    // before the save are made. (A suite's saves run one at a time, under its lock: a save's steps follow its take.)
    let armed = Recorder<Int>()
    let takes = Recorder<Bool>()
    let early = Recorder<Int>()
    if order.before.isEmpty { armed.append(1) }
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in
        switch step {
        case .afterTake: takes.append(armed.count > 0)
        case .beforeCorelibsSave:
          guard takes.values.last == true else { return early.append(1) }
          guard ran.count == 0 else { return }
          for step in order.during { run(step) }
          ran.append(1)
        default: return
        }
      }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    store[key] = 5
    for step in order.before { run(step) }
    armed.append(1)
    try await offThePool { try store.save() }
    // A save that took its writes before the steps before the save were all made ran another order.
    guard early.count == 0 else { return false }
    #expect(ran.count == 1)
    for step in order.after { run(step) }
    let expected = order.last ?? -1
    #expect(store[key] == expected, "at once")
    try await offThePool { try store.save() }
    try await offThePool { try store.save() }
    #expect(store[key] == expected, "after the saves")
    #expect(raw.object(forKey: "k") as? Int == order.last, "through plain UserDefaults")
    // (corelibs removes the file of a suite it holds empty.)
    let saved = suiteFileBytes(name)
    let domain = try saved.map { try PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any] }
    #expect(domain??["k"] as? Int == order.last, "in the file")
    #expect(saved != nil || order.last == nil)
    store.refresh()
    #expect(await seen.wait(timeout: 10) { $0.last == expected }, "\(seen.values)")
    #expect(issues.values.isEmpty)
    return true
  }
}

/// A plain write landing inside the library's own synchronize of a save (after the save looked at the library's
/// writes in corelibs' copy, before corelibs saved): corelibs saves it in the place of the library's unsaved write of
/// the key, and the save keeps it, not taking it for a load of the file that lost the library's write. (A background
/// save runs beside the app's writes: PlainUserDefaultsCoherenceTests' 2,000-key case read the library's older value
/// after a save in 1 of 4 whole-suite runs.)
@Suite(.linuxOnly) struct PlainWriteInsideCorelibsSaveTests {
  @Test func aPlainWriteInsideCorelibsSaveIsKept() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let key = DefaultsKey<Int>("k", default: -1)
    store[key] = 0
    try store.save()
    let ran = Recorder<Int>()
    CorelibsDomain.insideSynchronize.withLock { hooks in
      hooks[name] = {
        guard ran.count == 0 else { return }
        ran.append(1)
        UserDefaults(suiteName: name)?.set(2, forKey: "k")
      }
    }
    defer { _ = CorelibsDomain.insideSynchronize.withLock { $0.removeValue(forKey: name) } }
    store[key] = 1
    try await offThePool { try store.save() }
    #expect(ran.count == 1)
    #expect(store[key] == 2, "after the save")
    try await offThePool { try store.save() }
    #expect(store[key] == 2, "after the next save")
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == 2, "in the file")
    #expect(issues.values.isEmpty)
  }
}

/// A write of the library's that corelibs keeps no record of (the value its copy holds already, or the removal of a
/// key it lacks), made while its copy is older than the file (another process saved another value a moment before),
/// is read back and saved: corelibs' save loads the other value into its copy, and reads still give the library's
/// write until the save has written it.
@Suite(.linuxOnly) struct WritesCorelibsSkipsTests {
  @Test(arguments: [(Optional(1), true), (nil, true), (Optional(1), false), (nil, false)])
  func aWriteCorelibsSkippedSurvivesTheNextLoad(_ written: Int?, observed: Bool) async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    store[key] = written ?? 5
    if written == nil { store.reset(key) }
    store[DefaultsKey<Int>("other", default: 0)] = 1
    try store.save()
    let token = observed ? store.property(key).observe { _ in } : nil
    defer { token?.cancel() }
    // Another process saves k = 2 (an atomic replacement, as the library's saves are).
    try PropertyListSerialization.data(fromPropertyList: ["k": 2, "other": 1], format: .xml, options: 0)
      .write(to: URL(fileURLWithPath: path), options: .atomic)
    // The same write again, at once: corelibs' copy, not loaded again yet, holds it already.
    if let written { store[key] = written } else { store.reset(key) }
    let expected = written ?? -1
    // What a read on another thread gets from storage while the save runs (read here, on the saving thread, from
    // storage itself: a store's read also looks at the file, which takes the lock this save holds).
    let duringSave = Recorder<Int>()
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in
        if case .afterCorelibsSave = step { duringSave.append(store.hub.storage.object(forKey: "k") as? Int ?? -1) }
      }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    #expect(store[key] == expected)
    try await offThePool { try store.save() }
    #expect(duringSave.values.allSatisfy { $0 == expected }, "\(duringSave.values)")
    #expect(store[key] == expected)
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == written)
    #expect(issues.values.isEmpty)
  }
}

/// A store opened for a suite that has no file, while another thread's plain write lands after the open looked at
/// corelibs' copy (empty, so no lock was taken): nothing writes the file without the suite's lock. The open used to
/// drop corelibs' copy there, which is corelibs' synchronize: it saved the plain write in place, unlocked, while
/// another process may be saving (the history checker's plain writers: a file another process read as empty, a save
/// whose reload failed). The plain write is not lost: the store reads it at once, and its next save writes it.
@Suite(.linuxOnly) struct PlainWriteWhileAStoreOpensTests {
  @Test func aPlainWriteWhileAStoreOfAMissingFileOpensIsSavedOnlyUnderTheLock() async throws {
    let name = makeSuiteName()
    let path = preferencesFolder.appendingPathComponent("\(name).plist").path
    defer {
      removeSuiteFile(name)
      unlink(path + ".lock")
    }
    // The suite's lock, held as another process's save would hold it.
    let descriptor = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
    var held = true
    defer { if held { close(descriptor) } }
    let ran = Recorder<Int>()
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in
        guard step == .beforeLoadingMissingFile, ran.count == 0 else { return }
        ran.append(1)
        UserDefaults(suiteName: name)?.set(2, forKey: "k")
      }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    // corelibs' saves of the suite by the library (a drop of its copy is one). (Not the file's existence: another
    // test's `UserDefaults.synchronize()` saves every suite of the process in place, this plain write with it.)
    let synchronizes = Recorder<Int>()
    CorelibsDomain.insideSynchronize.withLock { $0[name] = { synchronizes.append(1) } }
    defer { _ = CorelibsDomain.insideSynchronize.withLock { $0.removeValue(forKey: name) } }
    let store = try #require(await offThePool { DefaultsStore(suiteName: name) })
    #expect(ran.count == 1)
    #expect(synchronizes.count == 0, "corelibs saved the suite while another held its lock")
    close(descriptor)
    held = false
    let key = DefaultsKey<Int>("k", default: -1)
    #expect(store[key] == 2, "at once")
    store[DefaultsKey<Int>("other", default: 0)] = 1
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == 2, "in the file")
    #expect(store[key] == 2, "after the save")
  }
}

/// A plain write (or removal) of a key the library wrote and has not saved, landing at each step of the save, with or
/// without another process's save of another key just before (the save then works from the file on disk, and
/// corelibs' file differs from the journal): the plain write is the last of the process, so it is what the store
/// reads at once and after the saves, and what the file holds.
@Suite(.linuxOnly) struct PlainWriteAtEachSaveStepTests {
  static let steps: [TrackedFile.SaveStep] = [
    .afterCheck, .beforeCorelibsSave, .afterCorelibsSave, .afterReadBack, .beforeFlush,
  ]

  @Test(arguments: steps, [false, true])
  func aPlainWriteAtThisStepIsTheLastWrite(_ at: TrackedFile.SaveStep, changedElsewhere: Bool) async throws {
    for removal in [false, true] {
      let (store, issues) = makeStore(.suite)
      let name = try #require(store.suiteName)
      let path = try #require(store.hub.persistence?.file.path)
      let key = DefaultsKey<Int>("k", default: -1)
      store[key] = 0
      store[DefaultsKey<Int>("other", default: 0)] = 1
      try store.save()
      store[key] = 5
      if changedElsewhere {
        // Another process's save of another key (an atomic replacement, as the library's saves are).
        try PropertyListSerialization.data(fromPropertyList: ["k": 0, "other": 2], format: .xml, options: 0)
          .write(to: URL(fileURLWithPath: path), options: .atomic)
      }
      let ran = Recorder<Int>()
      TrackedFile.saveSteps.withLock { hooks in
        hooks[path] = { step in
          guard step == at, ran.count == 0 else { return }
          ran.append(1)
          if removal {
            UserDefaults(suiteName: name)?.removeObject(forKey: "k")
          } else {
            UserDefaults(suiteName: name)?.set(2, forKey: "k")
          }
        }
      }
      defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
      try await offThePool { try store.save() }
      #expect(ran.count == 1, "the save passed \(at)")
      let expected = removal ? -1 : 2
      let label = "\(removal ? "removal" : "write") at \(at), changed elsewhere \(changedElsewhere)"
      #expect(store[key] == expected, "after the save: \(label)")
      try await offThePool { try store.save() }
      #expect(store[key] == expected, "after the next save: \(label)")
      let saved = try #require(suiteFileBytes(name))
      let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
      #expect(domain?["k"] as? Int == (removal ? nil : 2), "in the file: \(label) ran \(ran.count)")
      #expect(issues.values.isEmpty)
      removeSuiteFile(name)
    }
  }
}

/// A plain write landing inside the second synchronize of a save (corelibs saves again when another process changed
/// the file: ``SuiteSave/synchronizesAgain(corelibsSaved:changedElsewhere:stampBeforeSave:stamp:)``), after the first
/// saved the library's write: the save holds the suite's lock, so no other process's value can be loaded then, and a
/// changed object is the plain write. It was taken for a load that lost the library's write: reads gave the library's
/// older value and the save wrote it over the plain one (the checker's plainThreads kind, seed 254698696).
///
/// With `corelibsSkipped`, the library's write is one corelibs kept no record of (the 0 its copy, not loaded again,
/// still held) and the other process saved the key too (2): the first synchronize loads 2 over the library's write
/// (the key counts as loaded away), and the plain write in the second is still the process's last, not one more
/// load (a review of the loaded-away rule: the plain write was lost from the file, and reads gave the library's 0).
@Suite(.linuxOnly) struct PlainWriteInsideASecondSynchronizeTests {
  @Test(arguments: [false, true], [false, true])
  func aPlainWriteInsideTheSecondSynchronizeIsKept(removal: Bool, corelibsSkipped: Bool) async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    store[key] = 0
    store[DefaultsKey<Int>("other", default: 0)] = 1
    try await offThePool { try store.save() }
    if !corelibsSkipped { store[key] = 5 }
    // Another process's save of another key (and of k): the save synchronizes twice.
    try PropertyListSerialization.data(
      fromPropertyList: ["k": corelibsSkipped ? 2 : 0, "other": 2], format: .xml, options: 0
    )
    .write(to: URL(fileURLWithPath: path), options: .atomic)
    if corelibsSkipped { store[key] = 0 }
    let calls = Recorder<Int>()
    CorelibsDomain.insideSynchronize.withLock { hooks in
      hooks[name] = {
        calls.append(calls.count)
        guard calls.count == 2 else { return }
        if removal {
          UserDefaults(suiteName: name)?.removeObject(forKey: "k")
        } else {
          UserDefaults(suiteName: name)?.set(3, forKey: "k")
        }
      }
    }
    defer { _ = CorelibsDomain.insideSynchronize.withLock { $0.removeValue(forKey: name) } }
    try await offThePool { try store.save() }
    #expect(calls.count >= 2, "the save synchronized \(calls.count) times")
    let expected = removal ? -1 : 3
    #expect(store[key] == expected, "after the save")
    try await offThePool { try store.save() }
    #expect(store[key] == expected, "after the next save")
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == (removal ? nil : 3), "in the file")
    #expect(domain?["other"] as? Int == 2, "another process's save")
    #expect(issues.values.isEmpty)
  }
}

/// A plain removal (or write) of a key the library never wrote, saved by the library's next save of another key when
/// that save takes its entries from corelibs' copy (memory was loaded from another process's file, not parsed): the
/// save writes the plain change, so observers, who heard the file's value, hear of it at that save, not only at the
/// next `refresh()` (the checker's plainThreads kind, seed 211050506: an observer left on a value the file no longer
/// held once writes stopped).
@Suite(.linuxOnly) struct PlainChangeSavedFromCorelibsCopyTests {
  @Test(arguments: [false, true]) func observersHearAPlainChangeTheSaveWrote(removal: Bool) async throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let path = preferencesFolder.appendingPathComponent("\(name).plist").path
    // Another process's save, before the store opens: corelibs loads it, the library does not parse it.
    try PropertyListSerialization.data(fromPropertyList: ["k": 1, "other": 1], format: .xml, options: 0)
      .write(to: URL(fileURLWithPath: path), options: .atomic)
    let store = try #require(await offThePool { DefaultsStore(suiteName: name) })
    let issues = Recorder<DefaultsError>()
    store.issueHandler = { issues.append($0) }
    let key = DefaultsKey<Int>("k", default: -1)
    let heard = Recorder<Int>()
    let token = store.property(key).observe { heard.append($0) }
    defer { token.cancel() }
    #expect(heard.values == [1])
    if removal {
      UserDefaults(suiteName: name)?.removeObject(forKey: "k")
    } else {
      UserDefaults(suiteName: name)?.set(2, forKey: "k")
    }
    store[DefaultsKey<Int>("other", default: 0)] = 2
    try await offThePool { try store.save() }
    let expected = removal ? -1 : 2
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == (removal ? nil : 2), "in the file")
    #expect(await heard.wait(timeout: 10) { $0.last == expected }, "\(heard.values)")
    #expect(issues.values.isEmpty)
  }
}

/// A plain write of an observed key, then an edit of another key with nothing of the library's unsaved: the edit has
/// corelibs save the plain write before it merges its own change, and the observer hears the plain value, which the
/// file then holds. It stayed on the edit's older value (the checker's plainThreads kind, seed 146827935, shrunk to
/// one thread: it failed 15 runs in 20).
@Suite(.linuxOnly) struct PlainWriteAfterAnEditTests {
  @Test func theObserverHearsAPlainWriteAfterAnEdit() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let k0 = DefaultsKey<Int>("k0", default: -1)
    let k1 = DefaultsKey<Int>("k1", default: -1)
    let k2 = DefaultsKey<Int>("k2", default: -1)
    try await offThePool { try store.save() }
    store[k2] = 1
    let heard = Recorder<Int>()
    let token = store.property(k1).observe { heard.append($0) }
    defer { token.cancel() }
    try await offThePool { try store.save() }
    let token2 = store.property(k2).observe { _ in }
    defer { token2.cancel() }
    try await offThePool { try store.save() }
    try await offThePool {
      try store.edit { tx in
        tx[k2] = 2
        tx[k1] = 3
      }
    }
    #expect(store[k2] == 2)
    UserDefaults(suiteName: name)?.set(4, forKey: "k1")
    _ = try await offThePool { try store.property(k2).update { $0 = 5 } }
    store[k0] = 6
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k1"] as? Int == 4, "in the file")
    #expect(store[k1] == 4)
    #expect(await heard.wait(timeout: 10) { $0.last == 4 }, "\(heard.values)")
    #expect(issues.values.isEmpty)
  }
}

/// A write of the library's that corelibs keeps no record of (the value its copy holds already, or the removal of a
/// key it lacks), then a plain write or removal of the key landing inside the next synchronize (the save's, run on
/// another thread beside the app's writes): the plain change is the process's last, so it is read and saved. Only a
/// load of a file holding another value may take the key from the library's write; this is none, whether or not
/// another process saved the file since corelibs' copy was loaded (the checker's plainThreads kind, seeds 69862830
/// and 491612528: a removal of an absent key, then a plain write inside another thread's flush, read as absent).
@Suite(.linuxOnly) struct PlainWriteAfterAWriteCorelibsSkippedTests {
  enum OtherProcess: Sendable, CaseIterable {
    case none
    /// Another process saved another key before the library's write.
    case savedAnotherKey
    /// Another process saved the key itself (2) before the library's write.
    case savedTheKey
  }

  /// The library's write (nil: a removal) and the plain one; not both removals: a plain removal of an absent key
  /// changes nothing.
  static let writes: [(written: Int?, plain: Int?)] = [(1, 3), (1, nil), (nil, 3)]

  @Test(arguments: writes, OtherProcess.allCases)
  func thePlainChangeInsideTheNextSynchronizeWins(
    _ writes: (written: Int?, plain: Int?), otherProcess: OtherProcess
  ) async throws {
    let (written, plain) = writes
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    if let written { store[key] = written } else { store.reset(key) }
    store[DefaultsKey<Int>("other", default: 0)] = 1
    try await offThePool { try store.save() }
    switch otherProcess {
    case .none: break
    case .savedAnotherKey, .savedTheKey:
      // An atomic replacement, as the library's saves are, holding what the file held but for one key.
      var domain: [String: Any] = ["other": otherProcess == .savedAnotherKey ? 2 : 1]
      if otherProcess == .savedTheKey {
        domain["k"] = 2
      } else if let written {
        domain["k"] = written
      }
      try PropertyListSerialization.data(fromPropertyList: domain, format: .xml, options: 0)
        .write(to: URL(fileURLWithPath: path), options: .atomic)
    }
    // The same write again, at once: corelibs' copy (not loaded again when another process saved) holds it already.
    if let written { store[key] = written } else { store.reset(key) }
    let ran = Recorder<Int>()
    CorelibsDomain.insideSynchronize.withLock { hooks in
      hooks[name] = {
        guard ran.count == 0 else { return }
        ran.append(1)
        if let plain {
          UserDefaults(suiteName: name)?.set(plain, forKey: "k")
        } else {
          UserDefaults(suiteName: name)?.removeObject(forKey: "k")
        }
      }
    }
    defer { _ = CorelibsDomain.insideSynchronize.withLock { $0.removeValue(forKey: name) } }
    try await offThePool { try store.save() }
    #expect(ran.count == 1)
    let expected = plain ?? -1
    #expect(store[key] == expected, "after the save")
    try await offThePool { try store.save() }
    #expect(store[key] == expected, "after the next save")
    let saved = suiteFileBytes(name)
    let domain = try saved.map { try PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any] }
    #expect(domain??["k"] as? Int == plain, "in the file")
    #expect(issues.values.isEmpty)
  }
}

/// An edit that starts while memory is not the file, with a write of ours unsaved, saves first; when that save drops
/// corelibs' stale copy (the file holds a key corelibs' copy lacked) and a plain write of this process lands just
/// before the drop, the drop saves that plain write in place. The edit then runs on the file as it is: it used to
/// throw "Foundation's copy of the suite could not be reloaded from the file", because the save recorded corelibs'
/// copy as the file it had committed, not the file the drop rewrote (the checker's updateMix kind, seed 311801483,
/// and plainThreads, seed 69866060).
@Suite(.linuxOnly) struct EditAfterASaveThatDroppedAStaleCopyTests {
  @Test func theEditRunsOnTheFileThePlainWriteChanged() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    let other = DefaultsKey<Int>("other", default: 0)
    store[other] = 1
    try await offThePool { try store.save() }
    // Another process saves k: corelibs' copy, not loaded again yet, lacks it.
    try PropertyListSerialization.data(fromPropertyList: ["k": 2, "other": 1], format: .xml, options: 0)
      .write(to: URL(fileURLWithPath: path), options: .atomic)
    // The library removes k, which corelibs' copy lacks (corelibs keeps no record of it): the save's merge holds
    // what corelibs' copy lacks, so the save drops that copy.
    store.reset(key)
    let committed = Recorder<Int>()
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in if case .afterReadBack = step { committed.append(1) } }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    let ran = Recorder<Int>()
    CorelibsDomain.insideSynchronize.withLock { hooks in
      hooks[name] = {
        guard committed.count > 0, ran.count == 0 else { return }
        ran.append(1)
        UserDefaults(suiteName: name)?.set(3, forKey: "k")
      }
    }
    defer { _ = CorelibsDomain.insideSynchronize.withLock { $0.removeValue(forKey: name) } }
    try await offThePool { try store.edit { tx in tx[other] = 4 } }
    #expect(ran.count == 1, "the plain write landed in the drop")
    #expect(store[key] == 3)
    #expect(store[other] == 4)
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == 3, "in the file")
    #expect(domain?["other"] as? Int == 4, "in the file")
    #expect(issues.values.isEmpty)
  }
}

/// A removal corelibs keeps no record of (its copy, older than the file, lacked the key another process had just
/// saved), saved while a write of ours made during the save keeps corelibs' stale copy from being dropped: reads of
/// storage (what a read within a millisecond of the last look at the file gives) must not fall back to that copy's
/// older value once the save forgot the library's record of the removal (the checker's plainThreads kind, seed
/// 378347732: a read gave another process's value after this process's removal of the key had returned).
@Suite(.linuxOnly) struct StaleCopyAfterASaveTests {
  @Test(arguments: [false, true]) func aCommittedRemovalIsReadUntilTheCopyIsLoadedAgain(written: Bool) async throws {
    let (store, issues) = makeStore(.suite)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    let other = DefaultsKey<Int>("other", default: 0)
    if written { store[key] = 7 }
    store[other] = 1
    try await offThePool { try store.save() }
    // Another process saves k = 2: corelibs' copy, not loaded again yet, does not hold it.
    try PropertyListSerialization.data(fromPropertyList: ["k": 2, "other": 1], format: .xml, options: 0)
      .write(to: URL(fileURLWithPath: path), options: .atomic)
    // The same value again (a write corelibs skips), or a removal of a key the copy lacks.
    if written { store[key] = 7 } else { store.reset(key) }
    let expected = written ? 7 : -1
    let wroteDuringSave = Recorder<Int>()
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in
        guard case .beforeCorelibsSave = step, wroteDuringSave.count == 0 else { return }
        wroteDuringSave.append(1)
        store[other] = 3
      }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    try await offThePool { try store.save() }
    #expect(wroteDuringSave.count == 1)
    #expect(store.hub.storage.object(forKey: "k") as? Int ?? -1 == expected, "storage, right after the save")
    #expect(store[key] == expected)
    try await offThePool { try store.save() }
    #expect(store.hub.storage.object(forKey: "k") as? Int ?? -1 == expected, "storage, after the next save")
    #expect(store[key] == expected)
    #expect(issues.values.isEmpty)
  }
}
