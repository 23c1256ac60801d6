public import Observation
import Synchronization

/// A key of a store as a two-way reactive property: a stream of the key's value (current value first, then
/// every distinct change) that you can also write to.
///
/// ```swift
/// let volume = store.property(.volume)
/// volume.value = 0.3                                  // write
/// let token = volume.observe { print("volume", $0) }  // current value, then each change
/// for await v in volume.values { … }                  // the same, as an AsyncSequence
/// let link = volume.bind(to: otherVolume)             // keep two properties equal
/// ```
///
/// The shape is that of RxCocoa's `ControlProperty`, for settings. A property also conforms to
/// `Observable`: reading ``value`` inside `withObservationTracking` (or a SwiftUI view) tracks the key.
/// Properties are cheap, share their store's change hub, and may be used from any thread.
public final class DefaultsProperty<Value: DefaultsValue>: Sendable, Observable {
  /// The store the property reads and writes.
  public let store: DefaultsStore
  /// The key the property stands for.
  public let key: DefaultsKey<Value>

  private let registrar = ObservationRegistrar()
  /// The hub subscription that turns key changes into Observation notifications, made on the first read.
  private let tracking = Locked<DefaultsObservation?>(nil)

  init(store: DefaultsStore, key: DefaultsKey<Value>) {
    self.store = store
    self.key = key
  }

  /// The key's current value (its default when absent or of another type). Setting it writes the store and
  /// notifies observers if the value changed; setting `nil` on an optional key removes it, so it then reads the
  /// key's default (an optional key with a default other than `nil` never reads `nil`).
  ///
  /// Reading it is tracked by Observation (`withObservationTracking`, SwiftUI). For that, the first read registers
  /// the property as an observer of its key, for the property's whole life: Observation offers no public way to
  /// tell a tracked read from a plain one. The registration costs one observer (`bytes_per_observer` in the benchmark)
  /// and, on Linux, starts the watch of the suite's folder while it lasts; it ends when the property is released. A
  /// property that is written and never read costs nothing.
  public var value: Value {
    get {
      registrar.access(self, keyPath: \.value)
      startTrackingIfNeeded()
      return store[key]
    }
    set {
      store[key] = newValue
    }
  }

  /// Changes the value in place, atomically: the one-key ``DefaultsStore/edit(_:)``.
  ///
  /// ```swift
  /// try store.property(.launchCount).update { $0 += 1 }
  /// ```
  ///
  /// - Parameter body: Changes the value it is handed, the key's freshest value; it may throw, and then nothing is
  ///   written.
  /// - Returns: The new value.
  /// - Throws: The body's error, and the errors of ``DefaultsStore/edit(_:)``.
  @discardableResult
  public func update(_ body: (inout Value) throws -> Void) throws -> Value {
    try store.edit { tx in
      var value = tx[key]
      try body(&value)
      tx[key] = value
      return value
    }
  }

  /// Calls `handler` with the current value (unless `initial` is false), then with every distinct change.
  ///
  /// The handler runs synchronously, after the new value is visible to readers and outside every lock, so it may
  /// read and write the store. For a write through the library in this process it runs on the thread that made the
  /// change (for other sources of change, see "Which thread an observer runs on" in the Gotchas article), unless
  /// another thread is already
  /// delivering to this observer: changes that arrive while the handler runs are delivered by that thread right
  /// after it returns (the newest one only, if several arrived), so an observer never sees an older value after a
  /// newer one, and never runs on two threads at once.
  ///
  /// - Parameters:
  ///   - initial: Whether to call `handler` with the current value before returning.
  ///   - handler: Receives the values.
  /// - Returns: The token that keeps the observation alive; it ends on `cancel()` or when released.
  public func observe(initial: Bool = true, _ handler: @escaping @Sendable (Value) -> Void) -> DefaultsObservation {
    store.observe(key, initial: initial, handler: handler)
  }

  /// The current value, then each distinct change, as an `AsyncSequence`.
  ///
  /// When the consumer is slower than the writes it gets the newest value only (a buffer of one, like a
  /// state stream). Each access makes a new stream, observing from that moment; the stream ends, and its
  /// observer is removed, when the consuming task is cancelled or the stream is released.
  ///
  /// ```swift
  /// for await volume in store.property(.volume).values { print(volume) }
  /// ```
  public var values: AsyncStream<Value> {
    let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1))
    let token = observe { continuation.yield($0) }
    continuation.onTermination = { _ in token.cancel() }
    return stream
  }

  /// Keeps this property and `other` equal in both directions until the returned token ends.
  ///
  /// `other` first takes this property's value; after that a change of either is written to the other.
  /// A write that changes nothing notifies nobody, so the two never echo each other.
  ///
  /// - Parameter other: The property to keep equal to this one (of any store or suite).
  /// - Returns: The token that keeps the binding alive.
  public func bind(to other: DefaultsProperty<Value>) -> DefaultsObservation {
    let forward = observe { other.value = $0 }
    let backward = other.observe(initial: false) { [self] in self.value = $0 }
    return DefaultsObservation {
      forward.cancel()
      backward.cancel()
    }
  }

  private func startTrackingIfNeeded() {
    guard tracking.withLock({ $0 == nil }) else { return }
    let token = observe(initial: false) { [weak self] _ in
      guard let self else { return }
      self.registrar.withMutation(of: self, keyPath: \.value) {}
    }
    let loser = tracking.withLock { current -> DefaultsObservation? in
      guard current == nil else { return token }
      current = token
      return nil
    }
    loser?.cancel()
  }
}
