import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// The delivery mechanism itself, driven directly: the races it guards against are too rare to provoke
/// reliably through the public API.
@Suite struct DeliveryOrderTests {
  /// An observer driven by hand: not registered with its store's hub, so only the test's calls reach it.
  private func makeObserver(_ seen: Recorder<Int>, handler: (@Sendable (Int) -> Void)? = nil) -> KeyObserver<Int> {
    KeyObserver(store: makeStore().0, key: .count) { value in
      seen.append(value)
      handler?(value)
    }
  }

  @Test func anOlderVersionArrivingLateIsDropped() {
    let seen = Recorder<Int>()
    let observer = makeObserver(seen)
    observer.receive(.integer(1), version: 1, notify: true)
    observer.receive(.integer(3), version: 3, notify: true)
    observer.receive(.integer(2), version: 2, notify: true)  // a slower writer's fan-out
    #expect(seen.values == [1, 3])
  }

  @Test func aChangeDuringTheHandlerIsDeliveredAfterItNewestOnly() {
    let seen = Recorder<Int>()
    let box = Locked<KeyObserver<Int>?>(nil)
    let observer = makeObserver(seen) { value in
      guard value == 1, let observer = box.withLock({ $0 }) else { return }
      // Arrive while the handler runs: queued, not nested, and only the newest survives.
      observer.receive(.integer(2), version: 2, notify: true)
      observer.receive(.integer(3), version: 3, notify: true)
      #expect(seen.values == [1])
    }
    box.withLock { $0 = observer }
    observer.receive(.integer(1), version: 1, notify: true)
    #expect(seen.values == [1, 3])
    box.withLock { $0 = nil }
  }

  @Test func aBaselineIsRecordedWithoutCallingTheHandler() {
    let seen = Recorder<Int>()
    let observer = makeObserver(seen)
    observer.receive(.integer(4), version: 1, notify: false)
    observer.receive(.integer(4), version: 2, notify: true)
    observer.receive(.integer(5), version: 3, notify: true)
    #expect(seen.values == [5])
  }

  @Test func cancelledObserversHearNothing() {
    let seen = Recorder<Int>()
    let observer = makeObserver(seen)
    observer.cancel()
    observer.receive(.integer(1), version: 1, notify: true)
    #expect(seen.values.isEmpty)
  }

  @Test func aWriteThatChangesNothingRecordsNoChange() {
    let (store, _) = makeStore()
    let token = store.property(.count).observe { _ in }
    store[.count] = 1
    let before = store.hub.changeCount
    store[.count] = 1
    store.refresh()
    #expect(store.hub.changeCount == before)
    withExtendedLifetime(token) {}
  }
}
