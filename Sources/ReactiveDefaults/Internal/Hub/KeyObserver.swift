import Synchronization

/// One observer of one key: decodes the hub's changes to `Value`, drops stale and repeated values, and calls
/// the handler outside every lock.
///
/// Only one thread calls the handler at a time. A change that arrives while the handler runs (from another
/// thread, or from a write inside the handler) is kept as the single pending value and delivered right after
/// the handler returns, by the thread already delivering: newest value wins, nothing runs nested.
final class KeyObserver<Value: DefaultsValue>: ChangeReceiver, ObservationEnding {
  private struct Pending {
    var stored: PropertyListValue?
    var notify: Bool
  }

  /// The observer's state; each transition says what to do once the lock is released.
  private struct State {
    var newestVersion: UInt64 = 0
    var pending: Pending?
    var draining = false
    var cancelled = false
    var hasDelivered = false
    var lastDelivered: Value?

    enum ReceiveAction {
      /// Stale, cancelled, or kept for the thread already delivering.
      case none
      /// This thread delivers, until nothing is pending.
      case startDelivering
    }

    mutating func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) -> ReceiveAction {
      // Versions start at 1 and a receiver hears each version at most once: anything not newer is stale.
      guard !cancelled, version > newestVersion else { return .none }
      newestVersion = version
      pending = Pending(stored: stored, notify: notify || (pending?.notify ?? false))
      guard !draining else { return .none }
      draining = true
      return .startDelivering
    }

    enum NextAction {
      case decode(Pending)
      case stop
    }

    mutating func next() -> NextAction {
      guard !cancelled, let taken = pending else {
        draining = false
        pending = nil
        return .stop
      }
      pending = nil
      return .decode(taken)
    }

    enum DeliverAction {
      case callHandler
      case skip
    }

    /// Records the decoded value; the handler is called for a value that differs from the last one delivered.
    mutating func decoded(_ value: Value, notify: Bool) -> DeliverAction {
      defer {
        hasDelivered = true
        lastDelivered = value
      }
      let isNew = !hasDelivered || lastDelivered.map { !isSameStoredValue($0, value) } ?? true
      return notify && isNew && !cancelled ? .callHandler : .skip
    }
  }

  private let hub: ChangeHub
  private let key: DefaultsKey<Value>
  /// Where decoding problems are reported; gone with the store (written once, in `init`).
  nonisolated(unsafe) private weak var store: DefaultsStore?
  private let handler: @Sendable (Value) -> Void
  private let state = Locked(State())

  /// An observer of `key` in `store`'s suite; ``start(initial:)`` registers it. (Stored fields, not closures: an
  /// app can hold many observers, and each closure context would be one more allocation.)
  init(store: DefaultsStore, key: DefaultsKey<Value>, handler: @escaping @Sendable (Value) -> Void) {
    self.hub = store.hub
    self.key = key
    self.store = store
    self.handler = handler
  }

  /// Registers with the hub: from now on the key's changes arrive; the current value first when `initial`.
  func start(initial: Bool) {
    hub.add(self, forKey: key.name, initial: initial)
  }

  /// Ends the observation. No delivery starts after this returns; one that another thread had already begun may
  /// still call the handler once (the handler is never called under a lock, so `cancel()` cannot wait for it).
  func cancel() {
    state.withLock { $0.cancelled = true }
    hub.remove(self, forKey: key.name)
  }

  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) {
    switch state.withLock({ $0.receive(stored, version: version, notify: notify) }) {
    case .none: return
    case .startDelivering: deliverPending()
    }
  }

  private func deliverPending() {
    while case .decode(let next) = state.withLock({ $0.next() }) {
      let value = DefaultsStore.observedValue(next.stored, for: key, reportingTo: store)
      if case .callHandler = state.withLock({ $0.decoded(value, notify: next.notify) }) {
        LockOrder.assertNoneHeld("an observer")
        handler(value)
      }
    }
  }
}
