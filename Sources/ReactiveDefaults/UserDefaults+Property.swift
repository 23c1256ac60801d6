public import Foundation

extension UserDefaults {
  /// A two-way property over a key of this instance, typed at the call site: the untyped entry point for
  /// code that has a key name rather than a declared ``DefaultsKey``.
  ///
  /// ```swift
  /// let url = UserDefaults.standard.property(forKey: "documentUrl", as: URL.self)  // DefaultsProperty<URL?>
  /// url.value = URL(string: "https://example.com/a b")
  /// ```
  ///
  /// - Parameters:
  ///   - key: The key's name.
  ///   - type: The value type; the property's value is optional, `nil` while the key is absent.
  /// - Returns: A property over a ``DefaultsStore`` wrapping this instance.
  public func property<Value: DefaultsValue>(forKey key: String, as type: Value.Type = Value.self)
    -> DefaultsProperty<Value?>
  {
    DefaultsStore(self).property(DefaultsKey<Value?>(key))
  }
}
