import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// The lock order the debug builds check (``LockOrder``): which acquisitions it forbids, and that the library's own
/// paths (a write, an edit, a save, an observer's call) leave every count as it was.
@Suite struct LockOrderTests {
  /// Taking an earlier rank while holding a later one is forbidden; the same rank or a later one is not; an edit may
  /// begin inside another edit's body, which holds that suite's file lock.
  @Test func anEarlierRankUnderALaterOneIsForbidden() {
    typealias Rank = LockOrder.Rank
    var held = LockOrder.Held()
    held.add(.writeGate)
    #expect(held.forbidding(.suiteFile) == .writeGate)
    #expect(held.forbidding(.edit) == .writeGate)
    #expect(held.forbidding(.writeGate) == nil)
    #expect(held.forbidding(.state) == nil)
    held.remove(.writeGate)
    held.add(.suiteFile)
    #expect(held.forbidding(.edit) == nil)
    #expect(held.forbidding(.suiteFile) == nil)
    held.add(.state)
    #expect(held.forbidding(.writeGate) == .state)
    #expect(held.forbidding(.edit) == .state)
    held.remove(.state)
    held.remove(.suiteFile)
    #expect(held == LockOrder.Held())
  }

  /// Counts per rank stay apart (8 bits each) and nest.
  @Test func countsNestPerRank() {
    var held = LockOrder.Held()
    for _ in 0..<3 { held.add(.state) }
    held.add(.edit)
    #expect(held.count(.state) == 3 && held.count(.edit) == 1 && held.count(.suiteFile) == 0)
  }

  #if DEBUG
    /// A write, an observer's call, an edit and a save on a real suite take and release every lock they count: the
    /// thread holds none afterwards, and the observer ran holding no write gate, file lock or state lock.
    @Test func theLibrarysPathsReleaseWhatTheyTake() throws {
      let (store, issues) = makeStore()
      let key = DefaultsKey<Int>("n", default: 0)
      let seen = Locked<[LockOrder.Held]>([])
      let token = store.property(key).observe(initial: false) { _ in
        let held = LockOrder.held
        seen.withLock { $0.append(held) }
      }
      defer { token.cancel() }
      store[key] = 1
      try store.edit { $0[key] = 2 }
      try store.save()
      #expect(LockOrder.held == LockOrder.Held())
      let during = seen.withLock { $0 }
      #expect(during.count == 2)
      #expect(during.allSatisfy { $0.count(.writeGate) == 0 && $0.count(.state) == 0 && $0.count(.suiteFile) == 0 })
      #expect(issues.values.isEmpty)
    }
  #endif
}
