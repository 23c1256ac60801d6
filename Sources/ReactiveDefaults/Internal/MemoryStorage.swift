import Foundation

/// A suite kept in memory: the storage of ``DefaultsStore/inMemory(_:)``, isolated from `UserDefaults` and disk.
///
/// For the library's own tests it can also behave as Apple's `UserDefaults` does, so that code which only Apple
/// platforms exercise runs on Linux: `set` then calls observers synchronously, on the writing thread, after the
/// value is stored (as key-value observing and `didChangeNotification` do), and a test can write "from another
/// process", which reaches the hub only through those observers.
final class MemoryStorage: DefaultsStorage {
  /// How `apply` behaves towards observers.
  struct Behavior: Sendable {
    /// Posts the external-change signal synchronously inside every write, as Apple posts `didChangeNotification`.
    var postsChangesInsideWrites = false
    /// Called synchronously inside every write, after the value is stored and outside every lock, with the key:
    /// the app's own observers on Apple platforms (which may write, read or refresh the store from there).
    var onWrite: (@Sendable (String) -> Void)?

    /// The plain in-memory store.
    static let isolated = Behavior()
  }

  private let values: Locked<[String: PropertyListValue]>
  private let behavior: Behavior
  private let externalChange = Locked<(@Sendable () -> Void)?>(nil)

  init(_ initial: [String: PropertyListValue] = [:], behavior: Behavior = .isolated) {
    values = Locked(initial)
    self.behavior = behavior
  }

  func object(forKey key: String) -> Any? {
    values.withLock { $0[key] }?.foundationObject
  }

  func value(forKey key: String) -> PropertyListValue? {
    values.withLock { $0[key] }
  }

  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue? {
    let stored: PropertyListValue?
    switch write {
    case .set(let value): stored = value
    case .remove: stored = nil
    case .url(let url): stored = try? url.propertyListValue()
    }
    values.withLock { $0[key] = stored }
    behavior.onWrite?(key)
    if behavior.postsChangesInsideWrites { externalChange.withLock { $0 }?() }
    return stored
  }

  func snapshot() -> [String: PropertyListValue] {
    values.withLock { $0 }
  }

  func observeExternalChanges(_ handler: @escaping @Sendable () -> Void) {
    externalChange.withLock { $0 = handler }
  }

  /// A write the hub did not make (another process's, as Apple's key-value observing reports it): the value
  /// changes and the external-change signal is sent, on the calling thread.
  func writeFromOutside(_ value: PropertyListValue?, forKey key: String) {
    values.withLock { $0[key] = value }
    externalChange.withLock { $0 }?()
  }

  var persistence: SuitePersistence? { nil }
  var userDefaults: UserDefaults? { nil }
}
