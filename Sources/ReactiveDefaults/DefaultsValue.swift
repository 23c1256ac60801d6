/// A type that can be stored under a `UserDefaults` key as a native property-list value.
///
/// The library provides conformances for `Bool`, `Int` and every fixed-width integer, `Double`, `Float`,
/// `String`, `Data`, `Date`, `URL`, `UUID`, arrays and `[String: V]` dictionaries of storable values,
/// and `Optional`. Two more kinds of types conform by declaring it:
///
/// ```swift
/// enum Theme: String, DefaultsValue { case light, dark, system }  // stores its raw value
/// struct Layout: DefaultsCodable { var columns = 2 }             // stores JSON text
/// ```
///
/// A type with its own stored form implements both requirements (see ``PropertyListValue``).
/// Conversions are pure: no I/O, no locks.
public protocol DefaultsValue: Sendable {
  /// The property-list form of the value, or `nil` to remove the key (only `Optional.none` does that).
  ///
  /// - Throws: An error when the value cannot be represented (for example a ``DefaultsCodable`` value
  ///   whose encoder fails); the write is then refused and the stored value kept.
  func propertyListValue() throws -> PropertyListValue?

  /// Creates a value from its stored form, or returns `nil` when the stored form does not fit this type.
  ///
  /// Accepts lossless conversions (an integer for a `Double` key when exact, `0`/`1` or `"YES"`/`"NO"` for
  /// a `Bool`); anything else is a type mismatch, which the store reports and answers with the default.
  init?(propertyListValue: PropertyListValue)
}
