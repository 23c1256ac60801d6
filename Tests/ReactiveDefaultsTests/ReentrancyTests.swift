import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// What an app's observer does from inside `UserDefaults.set` (Apple calls key-value and notification observers
/// synchronously there, on the writing thread).
enum Reentry: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case writeAnotherKey, writeTheSameKey, refresh, registerAnObserver, readAPropertyForTheFirstTime
  var testDescription: String { rawValue }
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
