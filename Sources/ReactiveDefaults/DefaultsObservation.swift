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
  private enum Ending {
    case action(@Sendable () -> Void)
    case observer(any ObservationEnding)
  }

  private let ending: Locked<Ending?>

  /// Creates a token that runs `onCancel` once, on ``cancel()`` or when the token is released.
  ///
  /// - Parameter onCancel: What ends the observation.
  public init(onCancel: @escaping @Sendable () -> Void) {
    ending = Locked(.action(onCancel))
  }

  /// A token that cancels `observer`: no closure, so no allocation beyond the token.
  init(ending observer: any ObservationEnding) {
    ending = Locked(.observer(observer))
  }

  /// Ends the observation. No callback starts after this returns (one already running finishes).
  /// Calling it again does nothing.
  public func cancel() {
    let ending = ending.withLock { ending -> Ending? in
      defer { ending = nil }
      return ending
    }
    switch ending {
    case .action(let action): action()
    case .observer(let observer): observer.cancel()
    case nil: break
    }
  }

  /// Whether ``cancel()`` has run.
  public var isCancelled: Bool {
    ending.withLock { $0 == nil }
  }

  deinit {
    cancel()
  }
}

/// Something a ``DefaultsObservation`` ends.
protocol ObservationEnding: AnyObject, Sendable {
  func cancel()
}
