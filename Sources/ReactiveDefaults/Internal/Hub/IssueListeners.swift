/// The issue handlers of the stores of one suite (file problems and failed saves), told outside every lock.
final class IssueListeners: Sendable {
  private let listeners = Locked<[ObjectIdentifier: @Sendable (DefaultsError) -> Void]>([:])

  func add(_ id: ObjectIdentifier, _ listener: @escaping @Sendable (DefaultsError) -> Void) {
    listeners.withLock { $0[id] = listener }
  }

  func remove(_ id: ObjectIdentifier) {
    _ = listeners.withLock { $0.removeValue(forKey: id) }
  }

  /// Tells every listener about `issue`, on this thread, after taking them from under the lock.
  func announce(_ issue: DefaultsError) {
    for listener in listeners.withLock({ Array($0.values) }) {
      LockOrder.assertNoneHeld("an issue handler")
      listener(issue)
    }
  }
}
