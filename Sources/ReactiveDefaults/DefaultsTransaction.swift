/// The suite as an ``DefaultsStore/edit(_:)`` body sees it: reads give the freshest values (with the body's own
/// writes), and writes are kept until the body returns, then applied and saved together.
///
/// ```swift
/// try store.edit { tx in
///   tx[.launchCount] += 1
///   tx[.lastLaunch] = .now
/// }
/// ```
///
/// It exists only inside the body (it cannot be copied out of it). Reads behave as the store's: a key that is
/// absent, or holds another type (reported to ``DefaultsStore/issueHandler``), reads as its default. A write whose
/// value has no stored form makes the edit throw that error, and nothing is written.
public struct DefaultsTransaction: ~Copyable {
  private let store: DefaultsStore
  private var writes: [PropertyListKey: StorageWrite] = [:]
  private var order: [PropertyListKey] = []
  /// The first write that failed: the edit throws it, and writes nothing.
  private(set) var failure: DefaultsError?
  /// Problems of reads (type mismatches), told to the issue handler after the edit: never under its locks.
  private(set) var issues: [DefaultsError] = []

  init(store: DefaultsStore) {
    self.store = store
  }

  /// The key's value: this transaction's write of it, else the stored value, else the key's default. Setting it
  /// writes the value when the edit's body returns; setting `nil` removes the key.
  ///
  /// - Parameter key: The key.
  public subscript<Value>(key: DefaultsKey<Value>) -> Value {
    mutating get {
      switch decoded(key) {
      case .success(let value): return value
      case .failure(let issue):
        issues.append(issue)
        return key.defaultValue
      }
    }
    set {
      do { try set(newValue, for: key) } catch { failure = failure ?? error }
    }
  }

  /// The key's value, or an error saying why the stored value could not be read.
  ///
  /// - Parameter key: The key.
  /// - Returns: This transaction's write of the key, else the stored value, else the key's default.
  /// - Throws: ``DefaultsError/typeMismatch(key:expected:found:)`` when the key holds another type.
  public func value<Value>(for key: DefaultsKey<Value>) throws(DefaultsError) -> Value {
    try decoded(key).get()
  }

  /// Writes a value when the edit's body returns; writing `nil` removes the key.
  ///
  /// - Parameters:
  ///   - value: The new value.
  ///   - key: The key.
  /// - Throws: ``DefaultsError/encodingFailed(key:type:reason:)`` when the value has no stored form. The
  ///   transaction goes on, and this write is not part of it.
  public mutating func set<Value>(_ value: Value, for key: DefaultsKey<Value>) throws(DefaultsError) {
    record(try store.storageWrite(of: value, for: key), forName: key.name)
  }

  /// Removes the key when the edit's body returns, so reads give its default again.
  ///
  /// - Parameter key: The key.
  public mutating func reset<Value>(_ key: DefaultsKey<Value>) {
    guard !key.name.isEmpty else {
      failure = failure ?? .invalidKey(key.name)
      return
    }
    record(.remove, forName: key.name)
  }

  // MARK: By name (migrations)

  /// The value the key has in this transaction, in property-list form.
  func stored(forName name: String) -> PropertyListValue? {
    guard let write = writes[PropertyListKey(name)] else { return store.hub.storage.value(forKey: name) }
    return write.storedValue
  }

  /// Writes by name.
  mutating func record(_ write: StorageWrite, forName name: String) {
    let key = PropertyListKey(name)
    if writes.updateValue(write, forKey: key) == nil { order.append(key) }
  }

  /// The writes to apply, in the order their keys were first written.
  var pendingWrites: [(key: String, write: StorageWrite)] {
    order.map { ($0.string, writes[$0]!) }
  }

  private func decoded<Value>(_ key: DefaultsKey<Value>) -> Result<Value, DefaultsError> {
    guard let write = writes[PropertyListKey(key.name)] else {
      return store.decode(store.hub.storage.object(forKey: key.name), for: key)
    }
    guard let stored = write.storedValue else { return .success(key.defaultValue) }
    return DefaultsStore.decode(stored, for: key)
  }
}
