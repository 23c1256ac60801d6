import Dispatch
import Foundation

/// One observer of one key whose handler runs on the main actor (``DefaultsDelivery/mainActor``): it decodes the
/// hub's changes to `Value` and drops stale and repeated values, as ``KeyObserver`` does, but calls the handler on the
/// main thread only.
///
/// A change that arrives on the main thread is delivered there at once, inside the write (unless the handler is
/// running: then right after it returns, by the same loop). One that arrives on another thread is kept as the single
/// pending change and a drain is enqueued on the main queue (one at a time: later changes replace the pending one),
/// so a busy main actor gets the newest value, in order. Every handler call, and every decision to make one, happens
/// on the main thread: a `cancel()` made there stops everything, enqueued drains included.
final class MainActorKeyObserver<Value: DefaultsValue>: ChangeReceiver, ObservationEnding {
  private struct Pending {
    var stored: PropertyListValue?
    var notify: Bool
  }

  private struct State {
    var newestVersion: UInt64 = 0
    var pending: Pending?
    /// A drain is enqueued on the main queue.
    var scheduled = false
    /// The main thread is in the delivery loop (calling the handler).
    var delivering = false
    var cancelled = false
    var hasDelivered = false
    var lastDelivered: Value?

    enum ReceiveAction {
      case none
      /// The caller is on the main thread: it delivers now, until nothing is pending.
      case deliverHere
      /// Enqueue a drain on the main queue.
      case schedule
    }

    mutating func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool, onMain: Bool) -> ReceiveAction {
      guard !cancelled else { return .none }
      if version > newestVersion {
        newestVersion = version
        pending = Pending(stored: stored, notify: notify || (pending?.notify ?? false))
      } else if !(onMain && pending != nil) {
        // Stale. (On the main thread, a newer change another thread left pending is delivered now instead: a write
        // made on the main actor returns only once the handler saw it or something newer.)
        return .none
      }
      // The main thread's loop is running (this is a write from inside the handler, or from another thread): it
      // takes the change when the handler returns.
      if delivering { return .none }
      if onMain {
        delivering = true
        return .deliverHere
      }
      guard !scheduled else { return .none }
      scheduled = true
      return .schedule
    }

    /// An enqueued drain runs (on the main thread): whether it delivers (no loop runs already).
    mutating func drainBegins() -> Bool {
      scheduled = false
      guard !delivering, !cancelled, pending != nil else { return false }
      delivering = true
      return true
    }

    mutating func next() -> Pending? {
      guard !cancelled, let taken = pending else {
        delivering = false
        pending = nil
        return nil
      }
      pending = nil
      return taken
    }

    /// Records the decoded value; true when the handler is to be called (a value other than the last delivered).
    mutating func decoded(_ value: Value, notify: Bool) -> Bool {
      defer {
        hasDelivered = true
        lastDelivered = value
      }
      let isNew = !hasDelivered || lastDelivered.map { !isSameStoredValue($0, value) } ?? true
      return notify && isNew && !cancelled
    }
  }

  private let hub: ChangeHub
  private let key: DefaultsKey<Value>
  /// Where decoding problems are reported; gone with the store (written once, in `init`).
  nonisolated(unsafe) private weak var store: DefaultsStore?
  private let handler: @MainActor @Sendable (Value) -> Void
  private let state = Locked(State())

  init(store: DefaultsStore, key: DefaultsKey<Value>, handler: @escaping @MainActor @Sendable (Value) -> Void) {
    self.hub = store.hub
    self.key = key
    self.store = store
    self.handler = handler
  }

  /// Registers with the hub: the current value first when `initial` (delivered before this returns on the main
  /// thread, enqueued elsewhere).
  func start(initial: Bool) {
    hub.add(self, forKey: key.name, initial: initial)
  }

  func cancel() {
    state.withLock { state in
      state.cancelled = true
      state.pending = nil
    }
    hub.remove(self, forKey: key.name)
  }

  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) {
    let onMain = isMainThread()
    switch state.withLock({ $0.receive(stored, version: version, notify: notify, onMain: onMain) }) {
    case .none: return
    case .deliverHere: MainActor.assumeIsolated { deliverPending() }
    case .schedule:
      DispatchQueue.main.async { [self] in
        MainActor.assumeIsolated {
          guard state.withLock({ $0.drainBegins() }) else { return }
          deliverPending()
        }
      }
    }
  }

  @MainActor private func deliverPending() {
    while let next = state.withLock({ $0.next() }) {
      let value = DefaultsStore.observedValue(next.stored, for: key, reportingTo: store)
      if state.withLock({ $0.decoded(value, notify: next.notify) }) {
        LockOrder.assertNoneHeld("an observer")
        handler(value)
      }
    }
  }
}
