/// Whether two values are the same setting: `==` where the type is `Equatable` (a NaN being the same as another
/// NaN), else equal stored forms.
func isSameStoredValue<Value: DefaultsValue>(_ lhs: Value, _ rhs: Value) -> Bool {
  if let lhs = lhs as? any Equatable {
    return lhs.isEqual(to: rhs) || (isNaN(lhs) && isNaN(rhs))
  }
  return isSameSetting(try? lhs.propertyListValue(), try? rhs.propertyListValue())
}

/// A floating-point NaN, bare or in an `Optional`; collections of them are compared in their stored form by the hub.
private func isNaN(_ value: Any) -> Bool {
  (unwrapOptional(value) as? any FloatingPoint)?.isNaN ?? false
}

extension Equatable {
  fileprivate func isEqual(to other: Any) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}
