public import Foundation

/// A value in the form `UserDefaults` stores it: one of the property-list types.
///
/// Every ``DefaultsValue`` converts to and from this form. It is what the library compares to decide
/// whether a write changed anything, and it is the extension point for storing your own types:
///
/// ```swift
/// struct RGB: DefaultsValue {
///   var red = 0, green = 0, blue = 0
///   func propertyListValue() -> PropertyListValue? {
///     .array([.integer(Int128(red)), .integer(Int128(green)), .integer(Int128(blue))])
///   }
///   init?(propertyListValue: PropertyListValue) {
///     guard let parts = [Int](propertyListValue: propertyListValue), parts.count == 3 else { return nil }
///     (red, green, blue) = (parts[0], parts[1], parts[2])
///   }
/// }
/// ```
public enum PropertyListValue: Sendable, Hashable {
  /// `<true/>` or `<false/>`.
  case bool(Bool)
  /// `<integer>`: wide enough for every `Int64` and every `UInt64`.
  case integer(Int128)
  /// `<real>`.
  case real(Double)
  /// `<string>`.
  case string(String)
  /// `<data>`.
  case data(Data)
  /// `<date>`.
  case date(Date)
  /// `<array>`.
  case array([PropertyListValue])
  /// `<dict>`, whose keys are always strings, each compared by its exact characters (``PropertyListKey``).
  case dictionary([PropertyListKey: PropertyListValue])

  /// A short name of the kind of value, as used in ``DefaultsError/typeMismatch(key:expected:found:)``.
  public var kindName: String {
    switch self {
    case .bool: "Bool"
    case .integer: "Integer"
    case .real: "Real"
    case .string: "String"
    case .data: "Data"
    case .date: "Date"
    case .array: "Array"
    case .dictionary: "Dictionary"
    }
  }
}

extension PropertyListValue {
  /// The classes of the strings Foundation and CoreFoundation hand out: `NSString` (a Swift string bridged), and
  /// the class of a string CoreFoundation makes (what corelibs parses from a file).
  private static let stringClasses: Set<ObjectIdentifier> = {
    var classes: Set<ObjectIdentifier> = [ObjectIdentifier(NSString.self)]
    #if os(Linux)
      if let made = CorelibsPreferences.exactString("ReactiveDefaults") {
        classes.insert(ObjectIdentifier(type(of: made)))
      }
    #endif
    return classes
  }()

  /// Converts what `UserDefaults.object(forKey:)` or a property-list parser returned.
  ///
  /// Accepts the Swift value types corelibs Foundation returns (including `[Optional<Any>]` arrays,
  /// `[AnyHashable: Optional<Any>]` dictionaries, `Int64` and `UInt64`), and the `NS` classes Apple's
  /// Foundation returns. Returns `nil` for anything that is not a property-list value.
  public init?(foundationObject object: Any) {
    // A string Foundation or CoreFoundation holds (what a suite's domain hands out), by a class cast and the bridge
    // the compiler knows: the runtime's cast of `Any` to `String` looks up the bridging conformance at every read.
    if Self.stringClasses.contains(ObjectIdentifier(type(of: object))), let string = object as? NSString {
      self = .string(string as String)
      return
    }
    // A Swift string, and one CoreFoundation holds, at once: the casts below would each look at its type first.
    if type(of: object) == String.self || type(of: object) is NSString.Type, let string = object as? String {
      self = .string(string)
      return
    }
    // NSNumber instances (Apple's Foundation returns them; corelibs for values from `register(defaults:)`)
    // would match several numeric casts below, so they are classified by their own type first.
    if type(of: object) is NSNumber.Type, let number = object as? NSNumber {
      guard let value = PropertyListValue(number: number) else { return nil }
      self = value
      return
    }
    // An NSDictionary (what CoreFoundation parsed or holds) is read key by key: cast to a Swift dictionary, its keys
    // would merge by canonical equivalence. (corelibs' NSDictionary hands out nested ones cast that way: there they
    // are read through CoreFoundation, at every level.)
    #if os(Linux)
      if type(of: object) is NSDictionary.Type || type(of: object) is NSArray.Type {
        guard let value = CorelibsPreferences.collectionValue(of: object as AnyObject) else { return nil }
        self = value
        return
      }
    #else
      if type(of: object) is NSDictionary.Type, let dictionary = object as? NSDictionary {
        guard let entries = PropertyListValue.entries(of: dictionary) else { return nil }
        self = .dictionary(entries)
        return
      }
    #endif
    // Data that Foundation or CoreFoundation holds, by its bytes: corelibs bridges an `NSData` to `Data` byte by byte
    // (seconds for a few MiB).
    if type(of: object) is NSData.Type, let data = object as? NSData {
      self = .data(data.length == 0 ? Data() : Data(bytes: data.bytes, count: data.length))
      return
    }
    switch object {
    case let value as String: self = .string(value)
    case let value as Int: self = .integer(Int128(value))
    case let value as Bool: self = .bool(value)
    case let value as Double: self = .real(value)
    case let value as Data: self = .data(value)
    case let value as Date: self = .date(value)
    case let value as Int64: self = .integer(Int128(value))
    case let value as UInt64: self = .integer(Int128(value))
    case let value as Float: self = .real(Double(value))
    case let value as Int32: self = .integer(Int128(value))
    case let value as Int16: self = .integer(Int128(value))
    case let value as Int8: self = .integer(Int128(value))
    case let value as UInt: self = .integer(Int128(value))
    case let value as UInt32: self = .integer(Int128(value))
    case let value as UInt16: self = .integer(Int128(value))
    case let value as UInt8: self = .integer(Int128(value))
    case let value as [Any]:
      var items: [PropertyListValue] = []
      items.reserveCapacity(value.count)
      for element in value {
        guard let unwrapped = unwrapOptional(element), let item = PropertyListValue(foundationObject: unwrapped)
        else { return nil }
        items.append(item)
      }
      self = .array(items)
    case let value as [AnyHashable: Any]:
      var entries: [PropertyListKey: PropertyListValue] = [:]
      entries.reserveCapacity(value.count)
      for (key, element) in value {
        guard let name = key.base as? String, let unwrapped = unwrapOptional(element),
          let item = PropertyListValue(foundationObject: unwrapped)
        else { return nil }
        entries[PropertyListKey(name)] = item
      }
      self = .dictionary(entries)
    default:
      // An Optional boxed in Any (an element of corelibs' [Optional<Any>]) reads as what it wraps.
      guard object is any OptionalProtocol, let unwrapped = unwrapOptional(object) else { return nil }
      self.init(foundationObject: unwrapped)
    }
  }

  /// The entries of an `NSDictionary`, each key kept exactly as CoreFoundation holds it; nil if a key is not a
  /// string or a value not a property-list value.
  static func entries(of dictionary: NSDictionary) -> [PropertyListKey: PropertyListValue]? {
    var entries: [PropertyListKey: PropertyListValue] = [:]
    entries.reserveCapacity(dictionary.count)
    var valid = true
    dictionary.enumerateKeysAndObjects(options: []) { key, object, stop in
      guard let name = key as? String,
        let value = unwrapOptional(object).flatMap(PropertyListValue.init(foundationObject:))
      else {
        valid = false
        stop.pointee = true
        return
      }
      entries[PropertyListKey(name)] = value
    }
    return valid ? entries : nil
  }

  private init?(number: NSNumber) {
    #if canImport(Darwin)
      if CFGetTypeID(number) == CFBooleanGetTypeID() {
        self = .bool(number.boolValue)
        return
      }
    #endif
    switch UnicodeScalar(UInt8(bitPattern: number.objCType.pointee)) {
    case "c" where number.int8Value == 0 || number.int8Value == 1:
      #if canImport(Darwin)
        self = .integer(Int128(number.int8Value))
      #else
        self = .bool(number.boolValue)
      #endif
    case "f", "d": self = .real(number.doubleValue)
    case "Q", "L", "I", "S", "C": self = .integer(Int128(number.uint64Value))
    default: self = .integer(Int128(number.int64Value))
    }
  }

  /// The object handed to `UserDefaults.set(_:forKey:)`: plain Swift values, which both Foundations store
  /// as the matching property-list type.
  public var foundationObject: Any {
    switch self {
    case .bool(let value): value
    case .integer(let value):
      if let small = Int(exactly: value) {
        small
      } else if let large = UInt64(exactly: value) {
        large
      } else {
        // Only a hand-made .integer beyond 64 bits gets here; clamp rather than trap.
        value < 0 ? Int64.min : UInt64.max
      }
    case .real(let value): value
    case .string(let value): value
    case .data(let value): value
    case .date(let value): value
    case .array(let items): items.map(\.foundationObject)
    case .dictionary(let entries): foundationDictionary(entries)
    }
  }
}

/// A dictionary's entries as the Swift dictionary `UserDefaults.set(_:forKey:)` takes: of two keys that differ only
/// by Unicode normalization (one Swift `String` to Swift), the one CoreFoundation sorts first is kept.
private func foundationDictionary(_ entries: [PropertyListKey: PropertyListValue]) -> [String: Any] {
  var result: [String: Any] = [:]
  result.reserveCapacity(entries.count)
  for key in entries.keys.sorted() where result[key.string] == nil {
    result[key.string] = entries[key]!.foundationObject
  }
  return result
}

#if os(Linux)
  extension PropertyListValue {
    /// Whether a dictionary in the value has a key with a canonically equivalent spelling
    /// (``CorelibsPreferences/needsExactString(_:)``): the value must then reach corelibs as ``corelibsObject``.
    var hasExactKeys: Bool {
      switch self {
      case .array(let items): items.contains(where: \.hasExactKeys)
      case .dictionary(let entries):
        entries.contains { CorelibsPreferences.needsExactString($0.key.string) || $0.value.hasExactKeys }
      default: false
      }
    }

    /// The value as the object CoreFoundation stores (what corelibs' `UserDefaults.set` makes of a Swift value),
    /// with a dictionary's keys as strings CoreFoundation compares exactly, so no two keys merge.
    var corelibsObject: AnyObject {
      switch self {
      case .bool(let value): return NSNumber(value: value)
      case .integer(let value):
        if let small = Int64(exactly: value) { return NSNumber(value: small) }
        return NSNumber(value: UInt64(exactly: value) ?? (value < 0 ? 0 : UInt64.max))
      case .real(let value): return NSNumber(value: value)
      case .string(let value): return NSString(string: value)
      case .data(let value): return NSData(data: value)
      case .date(let value): return NSDate(timeIntervalSinceReferenceDate: value.timeIntervalSinceReferenceDate)
      case .array(let items): return NSArray(array: items.map(\.corelibsObject))
      case .dictionary(let entries):
        let keys = entries.keys.map { CorelibsPreferences.exactString($0.string) ?? NSString(string: $0.string) }
        return NSDictionary(objects: entries.values.map(\.corelibsObject), forKeys: keys)
      }
    }
  }
#endif

extension PropertyListValue {
  /// Whether two stored values are the same setting: `==`, except that a NaN is the same as another NaN (IEEE
  /// comparison would make every NaN write a change, and two properties bound together would echo it forever).
  @_spi(Tools) public func isSameSetting(as other: PropertyListValue) -> Bool {
    switch (self, other) {
    case (.real(let lhs), .real(let rhs)): lhs == rhs || (lhs.isNaN && rhs.isNaN)
    case (.array(let lhs), .array(let rhs)):
      lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.isSameSetting(as: $1) }
    case (.dictionary(let lhs), .dictionary(let rhs)):
      lhs.count == rhs.count && lhs.allSatisfy { key, value in rhs[key].map(value.isSameSetting) ?? false }
    default: self == other
    }
  }
}

/// Whether two optional stored values are the same setting (see ``PropertyListValue/isSameSetting(as:)``).
func isSameSetting(_ lhs: PropertyListValue?, _ rhs: PropertyListValue?) -> Bool {
  switch (lhs, rhs) {
  case (nil, nil): true
  case (let lhs?, let rhs?): lhs.isSameSetting(as: rhs)
  default: false
  }
}

/// Lets `Any` values holding an `Optional` (corelibs returns arrays as `[Optional<Any>]`) be unwrapped
/// without reflection.
protocol OptionalProtocol {
  var wrappedAny: Any? { get }
}

extension Optional: OptionalProtocol {
  var wrappedAny: Any? { map { $0 as Any } }
}

/// Unwraps any depth of `Optional` held in an `Any`; `nil` for a `none` at any depth.
func unwrapOptional(_ value: Any) -> Any? {
  var current = value
  while let optional = current as? any OptionalProtocol {
    guard let inner = optional.wrappedAny else { return nil }
    current = inner
  }
  return current
}
