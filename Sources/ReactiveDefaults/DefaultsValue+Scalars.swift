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

  /// Reads an integer in this type's range, or a real number that is exactly such an integer; also a string that
  /// spells one, as Apple's `integer(forKey:)` reads numeric strings (a launch argument `-count 5` arrives as the
  /// string `"5"`): the whole string, parsed exactly and without a locale (`"5"`, `"-12"`, `"1e3"`; not `"5 apples"`,
  /// `"0x10"` or `"0.9"`).
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .integer(let value):
      guard let exact = Self(exactly: value) else { return nil }
      self = exact
    case .real(let value):
      guard let exact = Self(exactly: value) else { return nil }
      self = exact
    case .string(let text):
      if let integer = NumericText.integer(text) {
        guard let exact = Self(exactly: integer) else { return nil }
        self = exact
      } else {
        guard let real = NumericText.real(text), let exact = Self(exactly: real) else { return nil }
        self = exact
      }
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

  /// Reads a real number, or an integer that a `Double` represents exactly; also a string that spells a finite
  /// decimal number, as Apple's `double(forKey:)` reads numeric strings (a launch argument `-volume 0.9` arrives as
  /// the string `"0.9"`): the whole string, without a locale (`"0.9"`, `"-12"`, `"1e3"`; not `"0.9 dB"`, `"0x10"`,
  /// `"nan"` or `"1e999"`).
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .real(let value): self = value
    case .integer(let value):
      guard let exact = Double(exactly: value) else { return nil }
      self = exact
    case .string(let text):
      guard let value = NumericText.real(text) else { return nil }
      self = value
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
    case .string(let text):
      // Parsed as a Double first, then narrowed as a stored real is.
      guard let value = NumericText.real(text), Float(value).isFinite else { return nil }
      self = Float(value)
    default: return nil
    }
  }
}

/// The number a string spells, read as Apple's typed getters read numeric strings, but exactly: the whole string,
/// ASCII only, no locale, no white space, no hexadecimal.
enum NumericText {
  /// An optional sign and decimal digits.
  static func integer(_ text: String) -> Int128? {
    guard text.utf8.count <= 64 else { return nil }
    return Int128(text, radix: 10)
  }

  /// An optional sign, decimal digits with at most one point (at least one digit), and an optional exponent
  /// (`e` or `E`, an optional sign, digits); finite.
  static func real(_ text: String) -> Double? {
    var bytes = text.utf8[...]
    guard bytes.count <= 400 else { return nil }
    if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
    let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    let whole = bytes.prefix(while: isDigit)
    bytes = bytes.dropFirst(whole.count)
    var fraction = bytes.prefix(0)
    if bytes.first == UInt8(ascii: ".") {
      bytes = bytes.dropFirst()
      fraction = bytes.prefix(while: isDigit)
      bytes = bytes.dropFirst(fraction.count)
    }
    guard !whole.isEmpty || !fraction.isEmpty else { return nil }
    if let marker = bytes.first, marker == UInt8(ascii: "e") || marker == UInt8(ascii: "E") {
      bytes = bytes.dropFirst()
      if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
      let exponent = bytes.prefix(while: isDigit)
      guard !exponent.isEmpty else { return nil }
      bytes = bytes.dropFirst(exponent.count)
    }
    guard bytes.isEmpty, let value = Double(text), value.isFinite else { return nil }
    return value
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
