/// A typed key: its name in `UserDefaults` and the value read when nothing (or a value of another type)
/// is stored.
///
/// ```swift
/// extension DefaultsKeys {
///   static let volume = DefaultsKey<Double>("volume", default: 0.5)
///   static let documentURL = DefaultsKey<URL?>("documentUrl")  // optional: the default is nil
/// }
/// ```
///
/// It is a class only so that leading-dot syntax finds the keys declared on ``DefaultsKeys``; it holds
/// two constants and is freely shared between threads.
public final class DefaultsKey<Value: DefaultsValue>: DefaultsKeys, @unchecked Sendable {
  /// The value a read returns while the key is absent or holds a value of another type.
  public let defaultValue: Value

  /// Creates a key with a default value.
  ///
  /// - Parameters:
  ///   - name: The key's name in `UserDefaults`.
  ///   - defaultValue: What reads return while the key is absent.
  public init(_ name: String, default defaultValue: Value) {
    self.defaultValue = defaultValue
    super.init(name: name)
  }

  /// Creates a key for an optional value, whose default is `nil`.
  ///
  /// - Parameter name: The key's name in `UserDefaults`.
  public init(_ name: String) where Value: ExpressibleByNilLiteral {
    self.defaultValue = nil
    super.init(name: name)
  }
}
