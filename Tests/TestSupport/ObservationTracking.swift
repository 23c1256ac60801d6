import Observation

/// Tracks, with Observation (`withObservationTracking`, once, as a SwiftUI view's body is tracked), the observable
/// properties `read` reads: the recorder it returns gets `true` when one of them changes.
public func trackObservation(_ read: () -> Void) -> Recorder<Bool> {
  let changed = Recorder<Bool>()
  withObservationTracking {
    read()
  } onChange: {
    changed.append(true)
  }
  return changed
}
