/// The state of one key's observer (``KeyObserver``, whichever thread its handler runs on), kept behind the observer's lock: the
/// newest version heard, the single pending change, whether a delivery loop runs (or, for the main actor, a drain is
/// enqueued), and the last value delivered. Each transition says what to do once the lock is released.
struct ObserverState<Value: DefaultsValue>: Sendable {
  /// A change not delivered yet: the newest stored value, and whether any change it stands for notifies.
  struct Pending: Sendable {
    var stored: PropertyListValue?
    var notify: Bool
  }

  enum ReceiveAction {
    /// Stale, cancelled, or left for the loop already delivering (or the drain already enqueued).
    case none
    /// The caller delivers now, until nothing is pending.
    case deliverHere
    /// Enqueue a drain on the main queue (only when the caller may not deliver).
    case schedule
  }

  private var newestVersion: UInt64 = 0
  private var pending: Pending?
  /// A drain is enqueued on the main queue (a main-actor handler only).
  private var scheduled = false
  /// A thread is in the delivery loop (calling the handler).
  private var delivering = false
  private var cancelled = false
  private var hasDelivered = false
  private var lastDelivered: Value?

  /// A change of the key. `callerDelivers`: the calling thread may run the delivery loop (always for a handler of any
  /// thread; on the main thread only for a main-actor one).
  ///
  /// When every caller may deliver, something pending always means a loop runs (a change is left pending only with a
  /// loop running, and the loop ends only when it takes the last one), so the stale branch below that lets a caller
  /// deliver a pending change ends at the loop's check: a stale change is dropped.
  mutating func receive(
    _ stored: PropertyListValue?, version: UInt64, notify: Bool, callerDelivers: Bool
  ) -> ReceiveAction {
    guard !cancelled else { return .none }
    if version > newestVersion {
      // Versions start at 1 and a receiver hears each version at most once: anything not newer is stale.
      newestVersion = version
      pending = Pending(stored: stored, notify: notify || (pending?.notify ?? false))
    } else if !(callerDelivers && pending != nil) {
      // Stale. (On the main thread, a newer change another thread left pending is delivered now instead: a write
      // made on the main actor returns only once the handler saw it or something newer.)
      return .none
    }
    // A loop is running (this is a write from inside the handler, or another thread's): it takes the change when
    // the handler returns.
    if delivering { return .none }
    if callerDelivers {
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

  /// The change to deliver next, or nil: the loop ends.
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

  /// No delivery starts after this; the pending change is dropped.
  mutating func cancel() {
    cancelled = true
    pending = nil
  }
}
