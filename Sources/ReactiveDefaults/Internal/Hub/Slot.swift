import Synchronization

/// The newest delivered value of one key of a multi-key observation.
final class Slot<Value: DefaultsValue>: @unchecked Sendable {  // `storage` and `delivered` are behind `lock`
  private let lock = Mutex(())
  private nonisolated(unsafe) var storage: Value
  private nonisolated(unsafe) var delivered = false

  init(_ value: Value) { storage = value }

  var value: Value { lock.withLock { _ in storage } }

  /// A value the key's observer delivered.
  func deliver(_ value: Value) {
    lock.withLock { _ in
      storage = value
      delivered = true
    }
  }

  /// The value read after registering; ignored once the observer delivered (its value is newer).
  func initialize(_ value: Value) {
    lock.withLock { _ in if !delivered { storage = value } }
  }
}
