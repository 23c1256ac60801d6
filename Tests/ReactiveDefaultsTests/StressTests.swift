import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// One observer of the stress run: every value it was handed, in order.
private final class Watcher: Sendable {
  let store: DefaultsStore
  let key: DefaultsKey<Int>
  let index: Int
  let seen = Locked<[Int]>([])
  let token = Locked<DefaultsObservation?>(nil)

  init(store: DefaultsStore, key: DefaultsKey<Int>, index: Int) {
    self.store = store
    self.key = key
    self.index = index
  }

  func start() {
    let observation = store.property(key).observe { [weak self] value in self?.seen.withLock { $0.append(value) } }
    token.withLock { $0 = observation }
  }
}

@Suite(.timeLimit(.minutes(10))) struct StressTests {
  /// Operations per task. Standard 2,500, as the thread sanitizer's stage has run it since 2026-12-06 (about 1 s alone
  /// here; 20,000 took 9 s alone and held the pool's two threads beside the rest of the suite). Its checks hold at
  /// every value, so a broken order or a leaked observer shows at any size; the log records no find that needed the
  /// full size, which CI runs as well.
  static let operationsPerTask = TestSize.pick(2_500, full: 20_000)
  static let tasks = 8

  @Test func mixedOperationsKeepEveryInvariant() async throws {
    let stores = [makeStore().0, makeStore().0]
    defer { for store in stores { removeSuiteFile(store.suiteName!) } }
    // Keys 0..<12 are checked for per-writer order; 12..<16 are also bound to each other across suites.
    let keys = (0..<16).map { DefaultsKey<Int>("key\($0)", default: 0) }
    let orderedKeys = 0..<12
    let started = ContinuousClock.now

    let survivors = await withTaskGroup(of: [Watcher].self) { group in
      for task in 0..<Self.tasks {
        group.addTask {
          var random = SeededRandom(state: UInt64(task) &* 7919 &+ 1)
          var watchers: [Watcher] = []
          var links: [DefaultsObservation] = []
          var sequence = 0
          for operation in 0..<Self.operationsPerTask {
            // Let other tests' tasks run now and then: this loop would otherwise hold a pool thread for seconds.
            if operation.isMultiple(of: 64) { await Task.yield() }
            let store = stores[Int.random(in: 0..<2, using: &random)]
            let index = Int.random(in: 0..<16, using: &random)
            let key = keys[index]
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
              sequence += 1
              store[key] = (task + 1) * 1_000_000 + sequence
            case 45..<65:
              _ = store[key]
            case 65..<70:
              store.reset(key)
            case 70..<80 where watchers.count < 8:
              let watcher = Watcher(store: store, key: key, index: index)
              watcher.start()
              watchers.append(watcher)
            case 70..<85:
              if !watchers.isEmpty {
                let watcher = watchers.remove(at: Int.random(in: 0..<watchers.count, using: &random))
                watcher.token.withLock { $0 }?.cancel()
              }
            case 85..<88:
              let bound = keys[Int.random(in: 12..<16, using: &random)]
              links.append(stores[0].property(bound).bind(to: stores[1].property(bound)))
              if links.count > 2 { links.removeFirst().cancel() }
            case 88..<92:
              store.refresh()
            case 92..<95:
              var iterator = store.property(key).values.makeAsyncIterator()
              _ = await iterator.next()
            default:
              _ = try? store.value(for: key)
            }
          }
          for link in links { link.cancel() }
          return watchers
        }
      }
      var all: [Watcher] = []
      for await watchers in group { all += watchers }
      return all
    }
    let duration = ContinuousClock.now - started
    print("stress: \(Self.tasks) tasks × \(Self.operationsPerTask) operations in \(duration)")

    for store in stores { store.refresh() }
    for watcher in survivors {
      let seen = watcher.seen.withLock { $0 }
      // Every live observer's last value is the stored one.
      #expect(seen.last == watcher.store[watcher.key], "key\(watcher.index): \(seen.suffix(3))")
      guard orderedKeys.contains(watcher.index) else { continue }
      // Per writer, values only go forward.
      for writer in 1...Self.tasks {
        let mine = seen.filter { $0 / 1_000_000 == writer }
        #expect(mine == mine.sorted(), "key\(watcher.index), writer \(writer)")
      }
    }
    for watcher in survivors { watcher.token.withLock { $0 }?.cancel() }
    for store in stores { #expect(store.hub.observerCount == 0) }
  }
}
