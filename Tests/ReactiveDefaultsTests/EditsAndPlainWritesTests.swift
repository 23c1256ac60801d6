import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// An edit never overwrites a write it did not see: while an edit's body runs, a write through any store of the suite
/// (on another thread) waits for the edit, so the next edit reads it.
@Suite struct EditsAndPlainWritesTests {
  enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, file, suite
    var testDescription: String { rawValue }
  }

  private static func makeStore(_ kind: Kind) throws -> (DefaultsStore, cleanUp: @Sendable () -> Void) {
    switch kind {
    case .memory: return (DefaultsStore.inMemory(), {})
    case .suite: return (try #require(DefaultsStore(suiteName: makeSuiteName("EditsAndPlainWrites"))), {})
    case .file:
      let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
        "ReactiveDefaultsTests.EditsAndPlainWrites.\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let store = try #require(DefaultsStore(fileURL: folder.appendingPathComponent("settings.plist")))
      return (store, { try? FileManager.default.removeItem(at: folder) })
    }
  }

  /// One thread loops `update { $0 += 1 }`; another writes values (`i × 10⁶`) through another store of the suite,
  /// each time waiting until an edit changed it. An edit that saw the write leaves a value at least as large;
  /// one that overwrote it unseen leaves the increment of an older, smaller value. (On 4b0b584: 69–94 % lost.)
  @Test(arguments: Kind.allCases) func anUpdateNeverOverwritesAPlainWriteItDidNotSee(_ kind: Kind) async throws {
    let (store, cleanUp) = try Self.makeStore(kind)
    defer { cleanUp() }
    // Another store object of the same suite (memory: the same store; a file store: the same file).
    let writer = try kind == .suite ? #require(DefaultsStore(suiteName: store.suiteName!)) : store
    let key = DefaultsKey<Int>("count", default: 0)
    // 300 writes (1,000 at the full size; 10,000 per kind: PLAIN_WRITES=10000 swift test --filter
    // EditsAndPlainWritesTests): on 4b0b584 69-94 % of the writes were lost, so any size finds a return of that hole.
    let writes =
      ProcessInfo.processInfo.environment["PLAIN_WRITES"].flatMap { Int($0) } ?? TestSize.pick(300, full: 1_000)
    let finished = Atomic<Bool>(false)
    let lost = Locked<[Int]>([])
    let unanswered = Atomic<Int>(0)
    let failures = Locked<(count: Int, last: String?)>((0, nil))
    await onThreadsOfTheirOwn(2) { index in
      if index == 0 {
        while !finished.load(ordering: .relaxed) {
          do { try store.property(key).update { $0 += 1 } } catch {
            failures.withLock { $0 = ($0.count + 1, "\(error)") }
          }
        }
        return
      }
      defer { finished.store(true, ordering: .relaxed) }
      for round in 1...writes {
        let written = round * 1_000_000
        writer[key] = written
        // The event waited for: an edit changed the value (bounded: a stalled updater fails the test, not hangs it).
        let limit = DispatchTime.now() + 30 * timeoutScale
        var now = writer[key]
        while now == written && DispatchTime.now() < limit { now = writer[key] }
        if now == written {
          unanswered.add(1, ordering: .relaxed)
          return
        }
        if now < written { lost.withLock { $0.append(written) } }
      }
    }
    let failed = failures.withLock { $0 }
    #expect(
      unanswered.load(ordering: .relaxed) == 0,
      "the updater stopped answering (\(failed.count) updates failed, the last: \(failed.last ?? "none"))")
    #expect(failed.count == 0, "\(failed.count) updates failed, the last: \(failed.last ?? "none")")
    let lostWrites = lost.withLock { $0 }
    #expect(
      lostWrites.isEmpty,
      "\(lostWrites.count) of \(writes) plain writes overwritten by an edit that missed them, first \(lostWrites.prefix(5))"
    )
  }
}
