extension PropertyListValue: DefaultsValue {
  /// Stored as itself: a key of type `PropertyListValue` reads and writes whatever the key holds, for tools
  /// that handle values of any type.
  public func propertyListValue() -> PropertyListValue? { self }

  /// Accepts any stored value.
  public init?(propertyListValue: PropertyListValue) {
    self = propertyListValue
  }
}
