import Foundation

/// The values of keys read lately whose stored form is decoded at each read (``DefaultsCodable`` values,
/// `RawRepresentable` ones, URLs, collections: ``DefaultsValue/init(propertyListValue:)``), each kept with the stored
/// value it was decoded from. A read still looks at the stored value, as every read does, so whatever changed it (a
/// write, another process's save, plain `UserDefaults` in this process, a sync's pull) is seen at once and there is
/// nothing to invalidate; when the stored value is exactly the one a value was decoded from (``isExactly(_:)``: not
/// `==`, which calls 0.0 and -0.0, or a string in its two Unicode normalizations, equal), that value is returned
/// without decoding again.
///
/// Bounded: at most ``capacity`` keys per suite (any one entry goes when a new key comes), and a stored value over
/// ``largestStored`` bytes is not kept (comparing it would cost more than it saves). A value that holds a class
/// instance anywhere (a class, an optional or a collection of one, a structure with one as a field) is never kept: the
/// caller could change the instance it was given. Nor is a value whose decoding is a cast (numbers, strings, dates,
/// data): a comparison would cost as much, and its entry would push out one that saves a decoding.
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
    guard let entry = entries.withLock({ $0[key] }), entry.stored.isExactly(stored) else { return nil }
    // The key holds the value's type: the box is a Box<Value>.
    return unsafeDowncast(entry.value, to: Box<Value>.self).value
  }

  /// Keeps `value`, decoded from `stored`, for the key `name`.
  func remember<Value: Sendable>(_ value: Value, forKey name: String, stored: PropertyListValue) {
    guard !Self.decodedByACast.contains(ObjectIdentifier(Value.self)) else { return }
    let key = Key(name: PropertyListKey(name), type: ObjectIdentifier(Value.self))
    guard DomainSizeBudget.size(of: key.name, stored) <= Self.largestStored, !Self.holdsAnInstance(value) else {
      return
    }
    entries.withLock { entries in
      if entries[key] == nil, entries.count >= Self.capacity { entries.remove(at: entries.startIndex) }
      entries[key] = Entry(stored: stored, value: Box(value))
    }
  }

  /// The types whose values are read from storage by a cast.
  private static let decodedByACast: Set<ObjectIdentifier> = {
    let types: [Any.Type] = [
      Bool.self, Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self,
      UInt32.self, UInt64.self, Double.self, Float.self, String.self, Data.self, Date.self,
      Bool?.self, Int?.self, Int64?.self, Double?.self, Float?.self, String?.self, Data?.self, Date?.self,
    ]
    return Set(types.map { ObjectIdentifier($0) })
  }()

  /// Whether `value` holds a class instance anywhere within it (at most ``largestWalk`` parts looked at; a value
  /// with more counts as holding one). A URL's, a `Data`'s and a string's storage are immutable: they are leaves.
  static func holdsAnInstance(_ value: Any) -> Bool {
    var budget = largestWalk
    func walk(_ value: Any) -> Bool {
      budget -= 1
      guard budget > 0 else { return true }
      if value is URL || value is Data || value is String || value is Date { return false }
      let mirror = Mirror(reflecting: value)
      if mirror.displayStyle == .class { return true }
      return mirror.children.contains { walk($0.value) }
    }
    return walk(value)
  }

  static let largestWalk = 1_000
}

extension PropertyListValue {
  /// Whether two stored values are written alike: reals by their bits (0.0 is not -0.0), strings by their UTF-8
  /// bytes (two Unicode normalizations are two strings), dates by their bits, collections element by element.
  func isExactly(_ other: PropertyListValue) -> Bool {
    switch (self, other) {
    // Byte for byte, one comparison of the bytes in memory (``PropertyListKey``'s equality).
    case (.string(let left), .string(let right)): return PropertyListKey(left) == PropertyListKey(right)
    case (.integer(let left), .integer(let right)): return left == right
    case (.real(let left), .real(let right)): return left.bitPattern == right.bitPattern
    case (.bool(let left), .bool(let right)): return left == right
    case (.data(let left), .data(let right)): return left == right
    case (.date(let left), .date(let right)):
      return left.timeIntervalSinceReferenceDate.bitPattern == right.timeIntervalSinceReferenceDate.bitPattern
    case (.array(let left), .array(let right)):
      return left.count == right.count && zip(left, right).allSatisfy { $0.isExactly($1) }
    case (.dictionary(let left), .dictionary(let right)):
      // Keys compare byte for byte (``PropertyListKey``).
      return left.count == right.count
        && left.allSatisfy { key, value in right[key].map { value.isExactly($0) } ?? false }
    default: return false
    }
  }
}
