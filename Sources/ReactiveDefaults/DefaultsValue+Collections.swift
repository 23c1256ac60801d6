extension Optional: DefaultsValue where Wrapped: DefaultsValue {
  /// The wrapped value's form; `nil` removes the key.
  public func propertyListValue() throws -> PropertyListValue? {
    guard let wrapped = self else { return nil }
    return try wrapped.propertyListValue()
  }

  /// Reads the wrapped type. (An absent key never gets here: it reads as the key's default, `nil`.)
  public init?(propertyListValue: PropertyListValue) {
    guard let wrapped = Wrapped(propertyListValue: propertyListValue) else { return nil }
    self = .some(wrapped)
  }
}

extension Array: DefaultsValue where Element: DefaultsValue {
  /// Stored as `<array>`. A property list has no null, so `nil` elements of an array of optionals are left out.
  public func propertyListValue() throws -> PropertyListValue? {
    var items: [PropertyListValue] = []
    items.reserveCapacity(count)
    for element in self {
      if let item = try element.propertyListValue() { items.append(item) }
    }
    return .array(items)
  }

  /// Reads an array whose every element reads as `Element`.
  public init?(propertyListValue: PropertyListValue) {
    guard case .array(let items) = propertyListValue else { return nil }
    var result: [Element] = []
    result.reserveCapacity(items.count)
    for item in items {
      guard let element = Element(propertyListValue: item) else { return nil }
      result.append(element)
    }
    self = result
  }
}

extension Dictionary: DefaultsValue where Key == String, Value: DefaultsValue {
  /// Stored as `<dict>`; entries whose value is `nil` are left out.
  public func propertyListValue() throws -> PropertyListValue? {
    var entries: [PropertyListKey: PropertyListValue] = [:]
    entries.reserveCapacity(count)
    for (key, value) in self {
      if let item = try value.propertyListValue() { entries[PropertyListKey(key)] = item }
    }
    return .dictionary(entries)
  }

  /// Reads a dictionary whose every value reads as `Value`. Swift's `String` keys compare by canonical
  /// equivalence: of two stored keys that differ only by Unicode normalization, one's value is kept.
  public init?(propertyListValue: PropertyListValue) {
    guard case .dictionary(let entries) = propertyListValue else { return nil }
    // The Swift type the user chose: its keys compare as Swift strings (documented above).
    var result: [String: Value] = [:]
    result.reserveCapacity(entries.count)
    for (key, item) in entries {
      guard let value = Value(propertyListValue: item) else { return nil }
      result[key.string] = value
    }
    self = result
  }
}

extension DefaultsValue where Self: RawRepresentable, RawValue: DefaultsValue {
  /// Stored as the raw value.
  public func propertyListValue() throws -> PropertyListValue? { try rawValue.propertyListValue() }

  /// Reads a raw value that names a value of this type.
  public init?(propertyListValue: PropertyListValue) {
    guard let raw = RawValue(propertyListValue: propertyListValue), let value = Self(rawValue: raw) else {
      return nil
    }
    self = value
  }
}
