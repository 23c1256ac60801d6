import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// The durability promise: a write's save starts within 100 ms of the write, and the write is on disk when that save
/// ends. The delay before a coalesced save follows the suite's last save (twice as long, from 50 to 100 ms), so that a
/// writer of a large suite meets a save for at most a third of its time. (Linux: on Apple platforms the preferences
/// daemon saves a suite.)
@Suite(.linuxOnly) struct SaveDelayTests {
  private let ms: UInt64 = 1_000_000

  /// Twice the last save, never under 50 ms, never over 100 ms.
  @Test(arguments: [(0, 50), (10, 50), (25, 50), (30, 60), (45, 90), (50, 100), (80, 100), (10_000, 100)])
  func theDelayIsTwiceTheLastSaveWithinItsBounds(lastSave: Int, delay: Int) throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    let persistence = try #require(store.hub.persistence)
    persistence.lastSaveDuration.store(UInt64(lastSave) * ms, ordering: .relaxed)
    #expect(persistence.saveDelay == UInt64(delay) * ms)
  }

  /// A write in a 10,000-key suite: the save the write schedules is due within 100 ms (twice the suite's last save,
  /// which takes tens of milliseconds), and when that save ends the write is in the file.
  @Test func aWriteInALargeSuiteIsOnDiskWhenItsSaveEnds() async throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    try store.edit { tx in
      for index in 0..<10_000 { tx[DefaultsKey<Int>("key\(index)", default: 0)] = index }
    }
    try store.save()
    let persistence = try #require(store.hub.persistence)
    let lastSave = persistence.lastSaveDuration.load(ordering: .relaxed)
    #expect(lastSave > 0)
    let path = persistence.file.path
    let committed = Recorder<Bool>()
    TrackedFile.saveSteps.withLock { $0[path] = { step in if step == .committed { committed.append(true) } } }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    store[DefaultsKey<Int>("written", default: 0)] = 1
    let delay = persistence.lastScheduledDelay.load(ordering: .relaxed)
    #expect(delay <= 100 * ms)
    #expect(delay == min(max(2 * lastSave, 50 * ms), 100 * ms))
    // At a commit (the save of the 10,000 keys may still have a timer to run, which finds nothing to take), the file
    // holds the write.
    let file = SuiteFile(suiteName: name)
    #expect(await committed.wait { _ in (try? file.savedEntries()?["written"]) == .integer(1) })
  }
}
