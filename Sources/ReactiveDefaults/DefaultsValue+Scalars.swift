public import Foundation

extension Bool: DefaultsValue {
  /// Stored as `<true/>` or `<false/>`.
  public func propertyListValue() -> PropertyListValue? { .bool(self) }

  /// Reads a Bool, the integers `0` and `1`, and the strings `YES`/`NO`/`true`/`false` (any case).
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .bool(let value): self = value
    case .integer(0): self = false
    case .integer(1): self = true
    case .real(0): self = false
    case .real(1): self = true
    case .string(let text):
      switch text.lowercased() {
      case "yes", "true": self = true
      case "no", "false": self = false
      default: return nil
      }
    default: return nil
    }
  }
}

/// The shared conversions of every fixed-width integer type.
extension FixedWidthInteger where Self: DefaultsValue {
  /// Stored as `<integer>`.
  public func propertyListValue() -> PropertyListValue? { .integer(Int128(self)) }

  /// Reads an integer in this type's range, or a real number that is exactly such an integer.
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .integer(let value):
      guard let exact = Self(exactly: value) else { return nil }
      self = exact
    case .real(let value):
      guard let exact = Self(exactly: value) else { return nil }
      self = exact
    default: return nil
    }
  }
}

extension Int: DefaultsValue {}
extension Int8: DefaultsValue {}
extension Int16: DefaultsValue {}
extension Int32: DefaultsValue {}
extension Int64: DefaultsValue {}
extension UInt: DefaultsValue {}
extension UInt8: DefaultsValue {}
extension UInt16: DefaultsValue {}
extension UInt32: DefaultsValue {}
extension UInt64: DefaultsValue {}

extension Double: DefaultsValue {
  /// Stored as `<real>`.
  public func propertyListValue() -> PropertyListValue? { .real(self) }

  /// Reads a real number, or an integer that a `Double` represents exactly.
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .real(let value): self = value
    case .integer(let value):
      guard let exact = Double(exactly: value) else { return nil }
      self = exact
    default: return nil
    }
  }
}

extension Float: DefaultsValue {
  /// Stored as `<real>` (a property list has one real type, so a `Float` is kept as a `Double`).
  public func propertyListValue() -> PropertyListValue? { .real(Double(self)) }

  /// Reads a real number within `Float`'s range (rounded to the nearest `Float`; a stored `Float` comes back
  /// exactly), or an integer that a `Float` represents exactly.
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .real(let value):
      let narrowed = Float(value)
      guard narrowed.isFinite == value.isFinite || value.isNaN else { return nil }
      self = narrowed
    case .integer(let value):
      guard let exact = Float(exactly: value) else { return nil }
      self = exact
    default: return nil
    }
  }
}

extension String: DefaultsValue {
  /// Stored as `<string>`.
  public func propertyListValue() -> PropertyListValue? { .string(self) }

  /// Reads a string.
  public init?(propertyListValue: PropertyListValue) {
    guard case .string(let value) = propertyListValue else { return nil }
    self = value
  }
}

extension Data: DefaultsValue {
  /// Stored as `<data>`.
  public func propertyListValue() -> PropertyListValue? { .data(self) }

  /// Reads data.
  public init?(propertyListValue: PropertyListValue) {
    guard case .data(let value) = propertyListValue else { return nil }
    self = value
  }
}

extension Date: DefaultsValue {
  /// Stored as `<date>`. On Linux the file keeps whole seconds only: the fraction is lost on disk.
  public func propertyListValue() -> PropertyListValue? { .date(self) }

  /// Reads a date.
  public init?(propertyListValue: PropertyListValue) {
    guard case .date(let value) = propertyListValue else { return nil }
    self = value
  }
}

extension UUID: DefaultsValue {
  /// Stored as its `uuidString`.
  public func propertyListValue() -> PropertyListValue? { .string(uuidString) }

  /// Reads a string in UUID form.
  public init?(propertyListValue: PropertyListValue) {
    guard case .string(let text) = propertyListValue, let value = UUID(uuidString: text) else { return nil }
    self = value
  }
}
