import Dispatch
import Foundation
public import Observation
import Synchronization

extension DefaultsProperty {
  /// Calls `handler` on the main actor with the current value (unless `initial` is false), then once per distinct
  /// change, wherever the write happened. See ``DefaultsDelivery`` for what it guarantees.
  ///
  /// ```swift
  /// token = store.property(.volume).observe(on: .mainActor) { volume in
  ///   model.volumeText = "\(Int(volume * 100)) %"   // main-actor state, no hop
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - delivery: ``DefaultsDelivery/mainActor``.
  ///   - initial: Whether to call `handler` with the current value first: before this returns when called on the
  ///     main actor, else as soon as the main actor runs.
  ///   - handler: Receives the values, on the main actor.
  /// - Returns: The token that keeps the observation alive; it ends on `cancel()` or when released.
  public func observe(
    on delivery: DefaultsDelivery, initial: Bool = true, _ handler: @escaping @MainActor (Value) -> Void
  ) -> DefaultsObservation {
    guard !key.name.isEmpty else {
      store.report(.invalidKey(key.name))
      if initial {
        let value = key.defaultValue
        if isMainThread() {
          MainActor.assumeIsolated { handler(value) }
        } else {
          Task { @MainActor in handler(value) }
        }
      }
      return DefaultsObservation {}
    }
    let observer = KeyObserver(store: store, key: key, handler: .mainActor(handler))
    observer.start(initial: initial)
    return DefaultsObservation(ending: observer)
  }

  /// Keeps this property and a property of main-actor state equal in both directions until the returned token ends:
  /// the state first takes the stored value; after that each change of the setting is written to the state (on the
  /// main actor, as ``observe(on:initial:_:)`` delivers), and each change of the state, seen through Observation, is
  /// written to the setting (on the main actor, right after the change). A value equal to the other side's is not
  /// written, so the two never echo each other. The binding holds `root` weakly: it ends when `root` goes.
  ///
  /// ```swift
  /// @MainActor @Observable final class SettingsModel { var volume = 0.5 }
  ///
  /// let model = SettingsModel()
  /// let link = store.property(.volume).bind(to: model, \.volume)
  /// ```
  ///
  /// - Parameters:
  ///   - root: An `Observable` object whose property is main-actor state (a `@MainActor` class, which is
  ///     `Sendable`).
  ///   - keyPath: The property of `root` to keep equal to this one.
  /// - Returns: The token that keeps the binding alive.
  @MainActor
  public func bind<Root: AnyObject & Observable & Sendable>(
    to root: Root, _ keyPath: ReferenceWritableKeyPath<Root, Value>
  ) -> DefaultsObservation {
    let binding = MainActorBinding(property: self, root: root, keyPath: keyPath)
    binding.start()
    return DefaultsObservation { binding.end() }
  }
}

extension DefaultsStore {
  /// Calls `handler` on the main actor with the current values of several keys (unless `initial` is false), then
  /// once per change of any of them, always with all their current values; see ``DefaultsDelivery``.
  ///
  /// ```swift
  /// token = store.observe(.volume, .theme, on: .mainActor) { volume, theme in
  ///   model.summary = "\(theme), \(volume)"
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - keys: The keys, of any value types.
  ///   - delivery: ``DefaultsDelivery/mainActor``.
  ///   - initial: Whether to call `handler` with the current values first: before this returns when called on the
  ///     main actor, else as soon as the main actor runs.
  ///   - handler: Receives the values, in the order of the keys, on the main actor.
  /// - Returns: The token that keeps the observation alive; it ends on `cancel()` or when released.
  public func observe<each Value: DefaultsValue>(
    _ keys: repeat DefaultsKey<each Value>, on delivery: DefaultsDelivery, initial: Bool = true,
    _ handler: @escaping @MainActor (repeat each Value) -> Void
  ) -> DefaultsObservation {
    let ended = EndFlag()
    // Every call comes from the main thread: the keys' observers deliver there, and the setup ends there.
    let observation = SeveralKeys(slots: repeat Slot(self[each keys])) { (values: repeat each Value) in
      MainActor.assumeIsolated {
        guard !ended.isSet else { return }
        handler(repeat each values)
      }
    }
    var tokens: [DefaultsObservation] = []
    func register<Key: DefaultsValue>(_ key: DefaultsKey<Key>, _ slot: Slot<Key>) {
      tokens.append(
        property(key).observe(on: .mainActor, initial: false) { value in
          slot.deliver(value)
          observation.changed()
        })
    }
    // As for ``observe(_:initial:_:)``: registered first, then each slot read again.
    repeat register(each keys, each observation.slots)
    func reread<Key: DefaultsValue>(_ key: DefaultsKey<Key>, _ slot: Slot<Key>) { slot.initialize(self[key]) }
    repeat reread(each keys, each observation.slots)
    if isMainThread() {
      observation.finishSetup(emitting: initial)
    } else {
      DispatchQueue.main.async { observation.finishSetup(emitting: initial) }
    }
    let all = tokens
    return DefaultsObservation {
      ended.set()
      for token in all { token.cancel() }
    }
  }
}

/// A two-way binding between a property and main-actor state (``DefaultsProperty/bind(to:_:)``), all on the main
/// actor: the setting's changes arrive through a main-actor observer, the state's through Observation, tracked anew
/// after each change.
@MainActor
private final class MainActorBinding<Root: AnyObject & Observable & Sendable, Value: DefaultsValue> {
  private let property: DefaultsProperty<Value>
  private weak var root: Root?
  private let keyPath: ReferenceWritableKeyPath<Root, Value>
  private var observation: DefaultsObservation?
  private var ended = false
  /// The state changed and its new value is not read yet: a change of the setting delivered meanwhile (older than
  /// the state's) must not overwrite it.
  private var stateChangePending = false

  init(property: DefaultsProperty<Value>, root: Root, keyPath: ReferenceWritableKeyPath<Root, Value>) {
    self.property = property
    self.root = root
    self.keyPath = keyPath
  }

  func start() {
    observation = property.observe(on: .mainActor) { [weak self] value in self?.settingChanged(value) }
    track()
  }

  /// Ends the binding: at once on the main actor (no write of either side after this returns), else as soon as the
  /// main actor runs.
  nonisolated func end() {
    if isMainThread() {
      MainActor.assumeIsolated { stop() }
    } else {
      Task { @MainActor [weak self] in self?.stop() }
    }
  }

  private func stop() {
    ended = true
    observation?.cancel()
    observation = nil
  }

  private func settingChanged(_ value: Value) {
    guard !ended, !stateChangePending else { return }
    guard let root else { return stop() }
    if !isSameStoredValue(root[keyPath: keyPath], value) { root[keyPath: keyPath] = value }
  }

  /// Reads the state inside Observation's tracking: its next change calls back (before the new value is set), and
  /// the value is read once the change is done, on the main actor.
  private func track() {
    guard !ended, let root else { return }
    let keyPath = keyPath
    withObservationTracking {
      _ = root[keyPath: keyPath]
    } onChange: { [weak self] in
      // Before the new value is set, on the thread that sets it (the main actor, for main-actor state).
      if isMainThread() { MainActor.assumeIsolated { self?.stateChangePending = true } }
      Task { @MainActor [weak self] in self?.stateChanged() }
    }
  }

  private func stateChanged() {
    stateChangePending = false
    guard !ended else { return }
    guard let root else { return stop() }
    let value = root[keyPath: keyPath]
    // Read from the store, not `property.value`, whose getter would start Observation's tracking of the property.
    if !isSameStoredValue(property.store[property.key], value) { property.value = value }
    track()
  }
}

/// Set once, when an observation ends.
private final class EndFlag: Sendable {
  private let ended = Atomic<Bool>(false)

  var isSet: Bool { ended.load(ordering: .acquiring) }

  func set() { ended.store(true, ordering: .releasing) }
}
