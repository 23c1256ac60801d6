/// The values of keys read lately whose stored form is decoded at each read (``DefaultsCodable`` values,
/// `RawRepresentable` ones, URLs, collections: ``DefaultsValue/init(propertyListValue:)``), each kept with the stored
/// value it was decoded from. A read still looks at the stored value, as every read does, so whatever changed it (a
/// write, another process's save, plain `UserDefaults` in this process, a sync's pull) is seen at once and there is
/// nothing to invalidate; when the stored value is the one a value was decoded from, that value is returned without
/// decoding again (comparing two stored values costs a fraction of decoding one).
///
/// Bounded: at most ``capacity`` keys per suite (any one entry goes when a new key comes), and a stored value over
/// ``largestStored`` bytes is not kept (comparing it would cost more than it saves). Values of class types are never
/// kept: the caller could change the instance it was given.
final class DecodedValues: Sendable {
  static let capacity = 256
  static let largestStored = 64 * 1024

  private struct Key: Hashable {
    var name: PropertyListKey
    var type: ObjectIdentifier
  }

  private struct Entry: Sendable {
    var stored: PropertyListValue
    /// A ``Box`` of the key's type (the entry's key names it).
    var value: any AnyObject & Sendable
  }

  private final class Box<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
  }

  private let entries = Locked<[Key: Entry]>([:])

  /// How many keys are kept.
  var count: Int { entries.withLock { $0.count } }

  /// The value decoded before from `stored` for the key `name` of type `Value`, or nil.
  func value<Value: Sendable>(_ type: Value.Type, forKey name: String, stored: PropertyListValue) -> Value? {
    let key = Key(name: PropertyListKey(name), type: ObjectIdentifier(Value.self))
    // Compared outside the lock: a collection's comparison is as long as the collection.
    guard let entry = entries.withLock({ $0[key] }), entry.stored == stored else { return nil }
    // The key holds the value's type: the box is a Box<Value>.
    return unsafeDowncast(entry.value, to: Box<Value>.self).value
  }

  /// Keeps `value`, decoded from `stored`, for the key `name`.
  func remember<Value: Sendable>(_ value: Value, forKey name: String, stored: PropertyListValue) {
    let key = Key(name: PropertyListKey(name), type: ObjectIdentifier(Value.self))
    guard !(Value.self is AnyClass), DomainSizeBudget.size(of: key.name, stored) <= Self.largestStored else { return }
    entries.withLock { entries in
      if entries[key] == nil, entries.count >= Self.capacity { entries.remove(at: entries.startIndex) }
      entries[key] = Entry(stored: stored, value: Box(value))
    }
  }
}
