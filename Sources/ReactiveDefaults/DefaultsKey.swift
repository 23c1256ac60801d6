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
  private enum Default {
    case constant(Value)
    case computed(@Sendable () -> Value)
  }

  private let defaultSource: Default

  /// The value a read returns while the key is absent or holds a value of another type. For a key made with a
  /// computed default, it is computed anew at each read.
  public var defaultValue: Value {
    switch defaultSource {
    case .constant(let value): value
    case .computed(let compute): compute()
    }
  }

  /// Creates a key with a default value.
  ///
  /// - Parameters:
  ///   - name: The key's name in `UserDefaults`.
  ///   - defaultValue: What reads return while the key is absent.
  public init(_ name: String, default defaultValue: Value) {
    self.defaultSource = .constant(defaultValue)
    super.init(name: name)
  }

  /// Creates a key whose default is computed when a read finds nothing stored, for defaults that cannot be
  /// constants.
  ///
  /// ```swift
  /// static let firstLaunch = DefaultsKey<Date>("firstLaunch", default: { .now })
  /// ```
  ///
  /// Each read that finds the key absent computes it again (store it to keep one value); observers receive the
  /// default as computed when the change that removed the key reached them.
  ///
  /// - Parameters:
  ///   - name: The key's name in `UserDefaults`.
  ///   - defaultValue: Computes the default; it may be called from any thread.
  public init(_ name: String, default defaultValue: @escaping @Sendable () -> Value) {
    self.defaultSource = .computed(defaultValue)
    super.init(name: name)
  }

  /// Creates a key for an optional value, whose default is `nil`.
  ///
  /// - Parameter name: The key's name in `UserDefaults`.
  public init(_ name: String) where Value: ExpressibleByNilLiteral {
    self.defaultSource = .constant(nil)
    super.init(name: name)
  }
}
