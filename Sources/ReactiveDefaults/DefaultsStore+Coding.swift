import Foundation

extension DefaultsStore {
  /// What writing `value` to `key` does to this store's storage, or why the storage refuses it (a file store: text XML
  /// cannot carry).
  func storageWrite<Value>(of value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) -> StorageWrite {
    let write = try Self.storageWrite(of: value, for: key)
    if let refusal = hub.storage.refusal(of: write, forKey: key.name, type: "\(Value.self)") {
      throw refusal
    }
    return write
  }

  /// What writing `value` to `key` does to storage.
  static func storageWrite<Value>(of value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) -> StorageWrite {
    guard !key.name.isEmpty else { throw .invalidKey(key.name) }
    #if canImport(Darwin)
      if let url = value as? URL { return .url(url) }
    #endif
    let stored: PropertyListValue?
    do {
      stored = try value.propertyListValue()
    } catch {
      throw .encodingFailed(key: key.name, type: "\(Value.self)", reason: "\(error)")
    }
    return stored.map(StorageWrite.set) ?? .remove
  }

  func stored<Value>(for key: DefaultsKey<Value>) -> Any? {
    guard !key.name.isEmpty else { return nil }
    return hub.object(forKey: key.name)
  }

  /// The subscript's other path: a value decoded before from the same stored value (``DecodedValues``), without a
  /// `Result`, else the value decoded. Apart from the hot path, which then needs no `Value?` (whose type, for a
  /// generic `Value`, is looked up in the runtime's table at every call that has one).
  @inline(never)
  func decodedOrDecoding<Value>(_ object: Any?, for key: DefaultsKey<Value>) -> Value {
    // The stored value is made once, for the decoding too.
    guard let object, let stored = PropertyListValue(foundationObject: object) else {
      return decodeReporting(object, for: key)
    }
    if let value = hub.decodedValues.value(Value.self, forKey: key.name, stored: stored) { return value }
    return decodeReporting(stored: stored, for: key)
  }

  /// Decodes what storage returned for a key, reporting why the default applies when it does (the subscript's slow
  /// path).
  @inline(never)
  func decodeReporting<Value>(_ object: Any?, for key: DefaultsKey<Value>) -> Value {
    switch decode(object, for: key) {
    case .success(let value): return value
    case .failure(let issue):
      report(issue)
      return key.defaultValue
    }
  }

  /// Decodes a stored value for a key, keeping what it decoded (``DecodedValues``), reporting why the default applies
  /// when it does (the subscript's slow path, when the value was not decoded before).
  @inline(never)
  func decodeReporting<Value>(stored: PropertyListValue, for key: DefaultsKey<Value>) -> Value {
    switch Self.decode(stored, for: key) {
    case .success(let value):
      hub.decodedValues.remember(value, forKey: key.name, stored: stored)
      return value
    case .failure(let issue):
      report(issue)
      return key.defaultValue
    }
  }

  /// Decodes what storage returned for a key; the failure says why the default applies.
  func decode<Value>(_ object: Any?, for key: DefaultsKey<Value>) -> Result<Value, DefaultsError> {
    guard !key.name.isEmpty else { return .failure(.invalidKey(key.name)) }
    guard let object else { return .success(key.defaultValue) }
    // The common case, and a hot path: corelibs hands back a Swift value of exactly the key's type.
    if ObjectIdentifier(type(of: object)) == ObjectIdentifier(Value.self), let value = object as? Value {
      return .success(value)
    }
    guard let stored = PropertyListValue(foundationObject: object) else {
      return .failure(.typeMismatch(key: key.name, expected: "\(Value.self)", found: "\(type(of: object))"))
    }
    // A stored value decoded before is not decoded again (``DecodedValues``).
    if let value = hub.decodedValues.value(Value.self, forKey: key.name, stored: stored) { return .success(value) }
    let decoded = Self.decode(stored, for: key)
    if case .success(let value) = decoded { hub.decodedValues.remember(value, forKey: key.name, stored: stored) }
    return decoded
  }

  static func decode<Value>(_ stored: PropertyListValue, for key: DefaultsKey<Value>) -> Result<Value, DefaultsError> {
    guard let value = Value(propertyListValue: stored) else {
      return .failure(.typeMismatch(key: key.name, expected: "\(Value.self)", found: stored.kindName))
    }
    return .success(value)
  }

  /// A stored value as an observer of `key` receives it: the key's default when absent or of another type (reported
  /// to `store`).
  static func observedValue<Value>(
    _ stored: PropertyListValue?, for key: DefaultsKey<Value>, reportingTo store: DefaultsStore?
  ) -> Value {
    guard let stored else { return key.defaultValue }
    switch decode(stored, for: key) {
    case .success(let value): return value
    case .failure(let issue):
      store?.report(issue)
      return key.defaultValue
    }
  }
}
