/// One step of ``DefaultsStore/migrate(_:)``: applied once per suite, identified by ``identity``.
///
/// ```swift
/// try store.migrate([
///   .rename("volumeLevel", to: .volume),                           // keep the value, drop the old key
///   .convert(.theme, from: Int.self) { $0 == 1 ? .dark : .light },  // change a key's stored type
///   .custom("2026-split-layout") { tx in tx[.columns] = 2 },        // anything else
/// ])
/// ```
///
/// A step whose source key is absent does nothing, and is recorded as applied all the same.
public struct DefaultsMigration: Sendable {
  /// The step's stable identity, recorded in the suite once the step is applied: `rename OLD to NEW`,
  /// `convert KEY from TYPE`, or a custom step's name. Changing it makes the step run again.
  public let identity: String
  private let body: @Sendable (inout DefaultsTransaction) throws -> Void

  private init(identity: String, body: @escaping @Sendable (inout DefaultsTransaction) throws -> Void) {
    self.identity = identity
    self.body = body
  }

  func apply(_ transaction: inout DefaultsTransaction) throws {
    try body(&transaction)
  }

  /// Moves the value of the key named `oldName` to `key`, and removes the old key. Any value `key` held is
  /// replaced.
  ///
  /// - Parameters:
  ///   - oldName: The name the value is stored under now.
  ///   - key: The key it moves to; the value must read as its type (lossless conversions count, as for reads).
  /// - Returns: The step `rename OLD to NEW`. It fails with ``DefaultsError/migrationFailed(step:key:reason:)``
  ///   when the old key holds a value of another type.
  public static func rename<Value>(_ oldName: String, to key: DefaultsKey<Value>) -> DefaultsMigration {
    let identity = "rename \(oldName) to \(key.name)"
    return DefaultsMigration(identity: identity) { tx in
      // By exact characters: renaming one spelling of a name to another (NFD to NFC) is a rename.
      guard PropertyListKey(oldName) != PropertyListKey(key.name), !oldName.isEmpty else {
        throw DefaultsError.migrationFailed(step: identity, key: oldName, reason: "a key cannot be renamed to itself")
      }
      guard let stored = tx.stored(forName: oldName) else { return }
      guard let value = Value(propertyListValue: stored) else {
        throw DefaultsError.migrationFailed(
          step: identity, key: oldName, reason: "holds \(stored.kindName), not \(Value.self)")
      }
      try tx.set(value, for: key)
      tx.record(.remove, forName: oldName)
    }
  }

  /// Rewrites the key's stored value from an older type to the key's type.
  ///
  /// - Parameters:
  ///   - key: The key, whose stored value is read as `oldType`.
  ///   - oldType: The type the value was stored as (lossless conversions count, as for reads).
  ///   - transform: Makes the new value from the old one; it may throw, which stops the migration.
  /// - Returns: The step `convert KEY from TYPE`. It fails with ``DefaultsError/migrationFailed(step:key:reason:)``
  ///   when the key holds a value that does not read as `oldType`.
  public static func convert<Old: DefaultsValue, Value>(
    _ key: DefaultsKey<Value>, from oldType: Old.Type, _ transform: @escaping @Sendable (Old) throws -> Value
  ) -> DefaultsMigration {
    let identity = "convert \(key.name) from \(Old.self)"
    return DefaultsMigration(identity: identity) { tx in
      guard let stored = tx.stored(forName: key.name) else { return }
      guard let old = Old(propertyListValue: stored) else {
        throw DefaultsError.migrationFailed(
          step: identity, key: key.name, reason: "holds \(stored.kindName), not \(Old.self)")
      }
      try tx.set(try transform(old), for: key)
    }
  }

  /// Anything else, written as an edit's body.
  ///
  /// - Parameters:
  ///   - name: The step's identity: never change it once shipped.
  ///   - body: Reads and writes through the migration's transaction; it may throw, which stops the migration.
  /// - Returns: The step.
  public static func custom(
    _ name: String, _ body: @escaping @Sendable (inout DefaultsTransaction) throws -> Void
  ) -> DefaultsMigration {
    DefaultsMigration(identity: name, body: body)
  }
}
