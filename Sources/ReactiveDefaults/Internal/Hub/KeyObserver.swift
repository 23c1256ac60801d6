import Dispatch
import Synchronization

/// One observer of one key: decodes the hub's changes to `Value`, drops stale and repeated values, and calls
/// the handler outside every lock; its state machine is ``ObserverState``.
///
/// Only one thread calls the handler at a time. A change that arrives while the handler runs (from another
/// thread, or from a write inside the handler) is kept as the single pending value and delivered right after
/// the handler returns, by the thread already delivering: newest value wins, nothing runs nested.
///
/// A main-actor handler (``DefaultsDelivery/mainActor``) runs on the main thread only. A change that arrives on the
/// main thread is delivered there at once, inside the write (unless the handler is running: then right after it
/// returns, by the same loop). One that arrives on another thread is kept as the single pending change and a drain is
/// enqueued on the main queue (one at a time: later changes replace the pending one), so a busy main actor gets the
/// newest value, in order. Every call of such a handler, and every decision to make one, happens on the main thread:
/// a `cancel()` made there stops everything, enqueued drains included.
final class KeyObserver<Value: DefaultsValue>: ChangeReceiver, ObservationEnding {
  /// Where the handler runs.
  enum Handler: Sendable {
    /// On the thread that delivers (the writer's, for a write through the library in this process).
    case anyThread(@Sendable (Value) -> Void)
    /// On the main thread.
    case mainActor(@MainActor @Sendable (Value) -> Void)
  }

  private let hub: ChangeHub
  private let key: DefaultsKey<Value>
  /// Where decoding problems are reported; gone with the store (written once, in `init`).
  nonisolated(unsafe) private weak var store: DefaultsStore?
  private let handler: Handler
  private let state = Locked(ObserverState<Value>())

  /// An observer of `key` in `store`'s suite; ``start(initial:)`` registers it. (Stored fields, not closures: an
  /// app can hold many observers, and each closure context would be one more allocation.)
  init(store: DefaultsStore, key: DefaultsKey<Value>, handler: Handler) {
    self.hub = store.hub
    self.key = key
    self.store = store
    self.handler = handler
  }

  /// An observer whose handler runs on the thread that delivers.
  convenience init(store: DefaultsStore, key: DefaultsKey<Value>, handler: @escaping @Sendable (Value) -> Void) {
    self.init(store: store, key: key, handler: .anyThread(handler))
  }

  /// Registers with the hub: from now on the key's changes arrive; the current value first when `initial` (for a
  /// main-actor handler: delivered before this returns on the main thread, enqueued elsewhere).
  func start(initial: Bool) {
    hub.add(self, forKey: key.name, initial: initial)
  }

  /// Ends the observation. No delivery starts after this returns; one that another thread had already begun may
  /// still call the handler once (the handler is never called under a lock, so `cancel()` cannot wait for it).
  func cancel() {
    state.withLock { $0.cancel() }
    hub.remove(self, forKey: key.name)
  }

  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) {
    let callerDelivers: Bool
    switch handler {
    case .anyThread: callerDelivers = true
    case .mainActor: callerDelivers = isMainThread()
    }
    switch state.withLock({ $0.receive(stored, version: version, notify: notify, callerDelivers: callerDelivers) }) {
    case .none: return
    case .deliverHere: deliverPending()
    case .schedule:
      DispatchQueue.main.async { [self] in
        guard state.withLock({ $0.drainBegins() }) else { return }
        deliverPending()
      }
    }
  }

  /// Delivers until nothing is pending (for a main-actor handler, called on the main thread only).
  private func deliverPending() {
    while let next = state.withLock({ $0.next() }) {
      let value = DefaultsStore.observedValue(next.stored, for: key, reportingTo: store)
      if state.withLock({ $0.decoded(value, notify: next.notify) }) {
        LockOrder.assertNoneHeld("an observer")
        switch handler {
        case .anyThread(let handler): handler(value)
        case .mainActor(let handler): MainActor.assumeIsolated { handler(value) }
        }
      }
    }
  }
}
