extension DefaultsStore {
  /// Calls `handler` with the current values of several keys (unless `initial` is false), then once per change of
  /// any of them, always with all their current values.
  ///
  /// ```swift
  /// let token = store.observe(.volume, .theme) { volume, theme in
  ///   print("volume", volume, "theme", theme)
  /// }
  /// ```
  ///
  /// Each key is registered once with the suite's hub, like a single-key observer; a change of one key re-reads
  /// nothing: the other values are the ones last delivered for their keys. The handler runs outside every lock, on
  /// one thread at a time; changes that arrive while it runs are delivered right after it returns (with the
  /// newest values).
  ///
  /// The value types come from the keys. Where a closure hides them (passing the values to `print(_:)`, which
  /// takes `Any`, lets the compiler pick `Any`), name them: `{ (volume: Double, theme: Theme) in … }`.
  ///
  /// - Parameters:
  ///   - keys: The keys, of any value types.
  ///   - initial: Whether to call `handler` with the current values before returning.
  ///   - handler: Receives the values, in the order of the keys.
  /// - Returns: The token that keeps the observation alive; it ends on `cancel()` or when released.
  public func observe<each Value: DefaultsValue>(
    _ keys: repeat DefaultsKey<each Value>, initial: Bool = true,
    _ handler: @escaping @Sendable (repeat each Value) -> Void
  ) -> DefaultsObservation {
    let observation = SeveralKeys(slots: repeat Slot(self[each keys]), handler: handler)
    var tokens: [DefaultsObservation] = []
    func register<Key: DefaultsValue>(_ key: DefaultsKey<Key>, _ slot: Slot<Key>) {
      tokens.append(
        property(key).observe(initial: false) { value in
          slot.deliver(value)
          observation.changed()
        })
    }
    // Registered first, then each slot read again: a write between the first read and the registration would
    // otherwise stay unseen until the key changed again. A delivery always wins over that second read.
    repeat register(each keys, each observation.slots)
    func reread<Key: DefaultsValue>(_ key: DefaultsKey<Key>, _ slot: Slot<Key>) { slot.initialize(self[key]) }
    repeat reread(each keys, each observation.slots)
    observation.finishSetup(emitting: initial)
    let all = tokens
    return DefaultsObservation { for token in all { token.cancel() } }
  }

  /// The current values of several keys, then their values after each change of any of them, as an
  /// `AsyncSequence` of tuples; like ``DefaultsProperty/values``, it keeps only the newest element when the
  /// consumer is slower than the writes, and ends (removing its observers) when the consuming task is cancelled.
  ///
  /// ```swift
  /// for await (volume, theme) in store.values(of: .volume, .theme) { … }
  /// ```
  ///
  /// - Parameter keys: The keys, of any value types.
  /// - Returns: A new stream, observing from this moment.
  public func values<each Value: DefaultsValue>(
    of keys: repeat DefaultsKey<each Value>
  ) -> AsyncStream<(repeat each Value)> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: (repeat each Value).self, bufferingPolicy: .bufferingNewest(1))
    let yielder = TupleYielder(continuation)
    let token = observe(repeat each keys) { (values: repeat each Value) in yielder.yield((repeat each values)) }
    continuation.onTermination = { _ in token.cancel() }
    return stream
  }

  /// ``values(of:)``, under its former name.
  @available(*, deprecated, renamed: "values(of:)")
  public func changes<each Value: DefaultsValue>(
    of keys: repeat DefaultsKey<each Value>
  ) -> AsyncStream<(repeat each Value)> {
    values(of: repeat each keys)
  }

  /// Removes several keys in one call; each key's observers are told once, if it held a value.
  ///
  /// - Parameter keys: The keys.
  public func reset<each Value: DefaultsValue>(_ keys: repeat DefaultsKey<each Value>) {
    for key in repeat each keys {
      guard !key.name.isEmpty else {
        report(.invalidKey(key.name))
        continue
      }
      hub.write(.remove, forKey: key.name)
    }
  }

  /// Removes every key of the suite but ``migrationsKey`` (so that migrations are not applied again); the observers
  /// of each removed key are told. On Linux the suite's file is then removed when nothing is left, under the
  /// suite's lock (a save failure goes to ``issueHandler``).
  public func removeAll() {
    for key in hub.storage.snapshot().keys where key.string != Self.migrationsKey {
      hub.write(.remove, forKey: key.string)
    }
    hub.saveReportingFailure()
  }

  /// Whether the key holds nothing, or holds its default value.
  ///
  /// - Parameter key: The key.
  public func isDefault<Value>(_ key: DefaultsKey<Value>) -> Bool {
    guard !key.name.isEmpty, let stored = hub.storage.value(forKey: key.name) else { return true }
    guard case .success(let value) = Self.decode(stored, for: key) else { return false }
    return isSameStoredValue(value, key.defaultValue)
  }

  /// The names of the keys stored in the suite's own domain (not the registered defaults or the arguments, nor
  /// ``migrationsKey``), sorted as CoreFoundation sorts them (by UTF-16 code units); empty for a `UserDefaults`
  /// instance whose suite cannot be told (Apple platforms). Two keys that differ only by Unicode normalization are
  /// two names here, each exactly as stored.
  public var keys: [String] {
    hub.storage.snapshot().keys.filter { $0.string != Self.migrationsKey }.sorted().map(\.string)
  }
}

extension DefaultsProperty {
  /// Whether the key holds nothing, or holds its default value (see ``DefaultsStore/isDefault(_:)``).
  public var isDefault: Bool {
    store.isDefault(key)
  }
}

/// Hands tuples to a stream's continuation (a tuple of a pack is not known to be `Sendable`).
private final class TupleYielder<Element>: @unchecked Sendable {  // the continuation is thread-safe
  private let continuation: AsyncStream<Element>.Continuation
  init(_ continuation: AsyncStream<Element>.Continuation) { self.continuation = continuation }
  func yield(_ element: sending Element) { continuation.yield(element) }
}
