/// Receives the changes of one key. Implemented by ``KeyObserver``; the hub knows nothing of value types.
protocol ChangeReceiver: AnyObject, Sendable {
  /// Called outside every hub lock, in no particular thread order: `version` says which change is newer.
  /// With `notify == false` the receiver only records the value as its baseline.
  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool)
}

/// The observers to call for one change, collected under the hub's lock and called after it.
struct Fanout {
  var stored: PropertyListValue?
  var version: UInt64
  var receivers: [any ChangeReceiver]

  func deliver() {
    for receiver in receivers { receiver.receive(stored, version: version, notify: true) }
  }
}

/// One observed key: its last value, the version of that value, and its receivers.
struct KeyEntry {
  var last: PropertyListValue?
  var version: UInt64
  var receivers: [ObjectIdentifier: any ChangeReceiver] = [:]
}

/// The hub's registry of observed keys (its state, behind its lock): each key's receivers and last value, and
/// the version counter that orders every change the hub records.
struct ObservedKeys {
  var version: UInt64 = 0
  /// Keyed by exact characters: a write of one spelling of a key tells only that spelling's observers.
  var keys: [PropertyListKey: KeyEntry] = [:]
  var receiverCount = 0

  /// Records `stored` as the key's newest value; returns whom to tell, or nil if nothing changed (or nobody
  /// observes the key).
  mutating func record(_ stored: PropertyListValue?, forKey name: String) -> Fanout? {
    let key = PropertyListKey(name)
    guard var entry = keys[key], !isSameSetting(entry.last, stored) else { return nil }
    version += 1
    entry.last = stored
    entry.version = version
    keys[key] = entry
    return Fanout(stored: stored, version: version, receivers: Array(entry.receivers.values))
  }

  /// What adding a receiver did.
  struct Added {
    /// The change to deliver first: the value changed behind the key's observers' backs.
    var fanout: Fanout?
    /// The version to hand the new receiver.
    var version: UInt64
    /// The hub's first receiver: start watching the suite.
    var firstOfHub: Bool
    /// The key's first receiver: storage starts reporting the key.
    var firstOfKey: Bool
  }

  /// Adds a receiver, after recording the key's current value.
  mutating func add(_ receiver: any ChangeReceiver, forKey name: String, current: PropertyListValue?) -> Added {
    let fanout = record(current, forKey: name)
    let key = PropertyListKey(name)
    let firstOfKey = keys[key] == nil
    if firstOfKey {
      version += 1
      keys[key] = KeyEntry(last: current, version: version)
    }
    keys[key]!.receivers[ObjectIdentifier(receiver)] = receiver
    receiverCount += 1
    return Added(fanout: fanout, version: keys[key]!.version, firstOfHub: receiverCount == 1, firstOfKey: firstOfKey)
  }

  /// Removes a receiver (and the key's entry with its last one); returns it, to be released after the lock,
  /// and whether it was the key's last and the hub's last.
  mutating func remove(_ receiver: any ChangeReceiver, forKey name: String) -> (
    removed: (any ChangeReceiver)?, lastOfHub: Bool, lastOfKey: Bool
  ) {
    let key = PropertyListKey(name)
    guard let removed = keys[key]?.receivers.removeValue(forKey: ObjectIdentifier(receiver)) else {
      return (nil, false, false)
    }
    let lastOfKey = keys[key]?.receivers.isEmpty == true
    if lastOfKey { keys[key] = nil }
    receiverCount -= 1
    return (removed, receiverCount == 0, lastOfKey)
  }
}
