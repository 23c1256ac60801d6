import Synchronization

/// Which keys a storage reports changes of one by one (on Apple platforms: the keys registered for key-value
/// observing on the suite's `UserDefaults`), kept equal to the keys the hub observes.
///
/// The hub reports each key's first observer (+1) and last (−1); the counts commute, so reports from different
/// threads may arrive in any order. The registrations themselves call out (Apple's key-value observing machinery),
/// so they run outside the lock, one thread at a time: whoever changes a count applies registrations until the
/// registered keys match the wanted ones (the way ``KeyObserver`` drains its pending values).
///
/// Keys that key-value observing cannot address (a `.` makes a key path of several keys, `@` an operator) are never
/// registered: their changes by other processes are not reported on Apple platforms.
final class KeyRegistrations: Sendable {
  /// What to do next, decided under the lock.
  enum Action: Hashable {
    case register(PropertyListKey)
    case unregister(PropertyListKey)
    case done
  }

  struct State {
    var wanted: [PropertyListKey: Int] = [:]
    var registered: Set<PropertyListKey> = []
    var applying = false

    /// Records a change of a key's count; true when the caller must apply registrations.
    mutating func change(_ name: String, by delta: Int) -> Bool {
      guard KeyRegistrations.canRegister(name) else { return false }
      let key = PropertyListKey(name)
      let count = (wanted[key] ?? 0) + delta
      // A −1 may arrive before its +1 (reports from different threads): counts below zero are kept.
      wanted[key] = count != 0 ? count : nil
      guard !applying else { return false }
      applying = true
      return true
    }

    /// The next registration to apply, recorded as applied; `.done` when none is left (the caller stops).
    mutating func next() -> Action {
      if let key = wanted.first(where: { $0.value > 0 && !registered.contains($0.key) })?.key {
        registered.insert(key)
        return .register(key)
      }
      if let key = registered.first(where: { (wanted[$0] ?? 0) <= 0 }) {
        registered.remove(key)
        return .unregister(key)
      }
      applying = false
      return .done
    }
  }

  private let state = Locked(State())
  private let register: @Sendable (String) -> Void
  private let unregister: @Sendable (String) -> Void

  init(register: @escaping @Sendable (String) -> Void, unregister: @escaping @Sendable (String) -> Void) {
    self.register = register
    self.unregister = unregister
  }

  /// Whether key-value observing can address the key: not empty, no `.` (a path of several keys), no `@` (an
  /// operator such as `@count`). Looked for as Unicode scalars, as key-value coding splits a key path: compared as
  /// Characters, `"a.\u{301}b"` holds no `.` (the dot and the accent make one Character) but KVO would split it.
  static func canRegister(_ key: String) -> Bool {
    !key.isEmpty && !key.unicodeScalars.contains(".") && !key.unicodeScalars.contains("@")
  }

  /// The hub's report: `+1` for a key's first observer, `-1` for its last.
  func change(_ key: String, by delta: Int) {
    guard state.withLock({ $0.change(key, by: delta) }) else { return }
    while true {
      switch state.withLock({ $0.next() }) {
      case .register(let key): register(key.string)
      case .unregister(let key): unregister(key.string)
      case .done: return
      }
    }
  }

  /// The keys registered now.
  var registeredKeys: Set<PropertyListKey> {
    state.withLock { $0.registered }
  }

  /// Unregisters every key (the storage is going away).
  func unregisterAll() {
    for key in state.withLock({ state -> Set<PropertyListKey> in
      defer { state.registered = [] }
      state.wanted = [:]
      return state.registered
    }) {
      unregister(key.string)
    }
  }
}
