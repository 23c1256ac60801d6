import Synchronization

/// A live observation: it lasts exactly as long as you keep this token.
///
/// Call ``cancel()`` to end it early, or let the token go: its `deinit` cancels. Keep it in a property
/// for as long as you want changes:
///
/// ```swift
/// let token = store.property(.volume).observe { print("volume is now", $0) }
/// // … later
/// token.cancel()
/// ```
public final class DefaultsObservation: Sendable {
  private let onCancel: Locked<(@Sendable () -> Void)?>

  /// Creates a token that runs `onCancel` once, on ``cancel()`` or when the token is released.
  ///
  /// - Parameter onCancel: What ends the observation.
  public init(onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = Locked(onCancel)
  }

  /// Ends the observation. No callback starts after this returns (one already running finishes).
  /// Calling it again does nothing.
  public func cancel() {
    let action = onCancel.withLock { action -> (@Sendable () -> Void)? in
      defer { action = nil }
      return action
    }
    action?()
  }

  /// Whether ``cancel()`` has run.
  public var isCancelled: Bool {
    onCancel.withLock { $0 == nil }
  }

  deinit {
    cancel()
  }
}
