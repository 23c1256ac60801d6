/// The namespace of your keys: declare each key once as a static property in an extension.
///
/// ```swift
/// extension DefaultsKeys {
///   static let volume = DefaultsKey<Double>("volume", default: 0.5)
///   static let documentURL = DefaultsKey<URL?>("documentUrl")
/// }
/// store[.volume] = 0.8
/// ```
///
/// ``DefaultsKey`` is a subclass, so the static properties declared here are found by leading-dot syntax
/// wherever a `DefaultsKey<Value>` is expected.
open class DefaultsKeys: @unchecked Sendable {
  /// The key's name in `UserDefaults`.
  public let name: String

  /// Creates a key with a name, for ``DefaultsKey``'s initializers (an untyped key has no use: declare a typed
  /// ``DefaultsKey``). An empty name is refused on every read and write (reported as
  /// ``DefaultsError/invalidKey(_:)``).
  init(name: String) {
    self.name = name
  }
}
