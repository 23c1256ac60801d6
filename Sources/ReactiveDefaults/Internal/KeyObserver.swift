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

  private struct State {
    var newestVersion: UInt64 = 0
    var pending: Pending?
    var draining = false
    var cancelled = false
    var hasDelivered = false
    var lastDelivered: Value?
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

  /// Ends the observation: no handler call starts after this returns.
  func cancel() {
    state.withLock { $0.cancelled = true }
    hub.remove(self, forKey: key.name)
  }

  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) {
    let startDraining = state.withLock { state -> Bool in
      // Versions start at 1 and a receiver hears each version at most once: anything not newer is stale.
      guard !state.cancelled, version > state.newestVersion else { return false }
      state.newestVersion = version
      state.pending = Pending(stored: stored, notify: notify || (state.pending?.notify ?? false))
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    if startDraining { drain() }
  }

  private func drain() {
    while true {
      let next = state.withLock { state -> Pending? in
        guard !state.cancelled, let pending = state.pending else {
          state.draining = false
          state.pending = nil
          return nil
        }
        state.pending = nil
        return pending
      }
      guard let next else { return }
      let value = decode(next.stored)
      let isNew = state.withLock { state -> Bool in
        defer {
          state.hasDelivered = true
          state.lastDelivered = value
        }
        guard state.hasDelivered, let last = state.lastDelivered else { return true }
        return !isSameStoredValue(last, value)
      }
      if next.notify && isNew { handler(value) }
    }
  }
}

extension KeyObserver {
  /// The stored value as `Value`: the key's default when absent or of another type (reported to the store).
  fileprivate func decode(_ stored: PropertyListValue?) -> Value {
    guard let stored else { return key.defaultValue }
    switch DefaultsStore.decode(stored, for: key) {
    case .success(let value): return value
    case .failure(let issue):
      store?.report(issue)
      return key.defaultValue
    }
  }
}

/// Whether two values are the same setting: `==` where the type is `Equatable` (a NaN being the same as another
/// NaN), else equal stored forms.
func isSameStoredValue<Value: DefaultsValue>(_ lhs: Value, _ rhs: Value) -> Bool {
  if let lhs = lhs as? any Equatable {
    return lhs.isEqual(to: rhs) || (isNaN(lhs) && isNaN(rhs))
  }
  return isSameSetting(try? lhs.propertyListValue(), try? rhs.propertyListValue())
}

/// A floating-point NaN, bare or in an `Optional`; collections of them are compared in their stored form by the hub.
private func isNaN(_ value: Any) -> Bool {
  (unwrapOptional(value) as? any FloatingPoint)?.isNaN ?? false
}

extension Equatable {
  fileprivate func isEqual(to other: Any) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}
