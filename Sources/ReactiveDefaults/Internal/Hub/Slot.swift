/// The newest delivered value of one key of a multi-key observation.
final class Slot<Value: DefaultsValue>: Sendable {
  /// The value, and whether the key's observer delivered it. Behind ``Locked`` (not a bare `Mutex`, whose waits
  /// ThreadSanitizer cannot see on Linux: a delivery on a save's thread beside a read on another was a race to it).
  private let state: Locked<(value: Value, delivered: Bool)>

  init(_ value: Value) { state = Locked((value, false)) }

  var value: Value { state.withLock { $0.value } }

  /// A value the key's observer delivered.
  func deliver(_ value: Value) {
    state.withLock { $0 = (value, true) }
  }

  /// The value read after registering; ignored once the observer delivered (its value is newer).
  func initialize(_ value: Value) {
    state.withLock { state in if !state.delivered { state.value = value } }
  }
}
