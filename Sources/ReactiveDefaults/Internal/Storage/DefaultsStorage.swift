import Foundation

/// What a write does to storage.
enum StorageWrite: Sendable {
  case set(PropertyListValue)
  case remove
  /// A URL written the platform's way: Apple's own `set(_: URL?, forKey:)` on Apple platforms, the library's
  /// keyed archive elsewhere.
  case url(URL)
}

extension StorageWrite {
  /// The value the write stores, in property-list form (nil: removed); a URL as the library's keyed archive.
  var storedValue: PropertyListValue? {
    switch self {
    case .set(let value): value
    case .remove: nil
    case .url(let url): try? url.propertyListValue()
    }
  }
}

/// Where a suite's values live: the one seam between the change hub and `UserDefaults` or memory.
///
/// Implementations: ``UserDefaultsStorage`` (on Linux with a ``SuitePersistence`` that owns the suite's plist; on
/// Apple platforms the preferences daemon owns it), ``FileStorage`` (a file store: a ``SuitePersistence`` on every
/// platform) and ``MemoryStorage``. The hub calls ``apply(_:forKey:)``, which
/// may call back into unknown code (Apple's key-value and notification observers run inside `UserDefaults.set`),
/// outside every lock of its own, one write at a time (see ``WriteGate``).
protocol DefaultsStorage: AnyObject, Sendable {
  /// The stored object as Foundation hands it out (the typed read's fast path compares its type), or nil.
  func object(forKey key: String) -> Any?
  /// The stored value in property-list form; nil when absent or not a property-list value.
  func value(forKey key: String) -> PropertyListValue?
  /// Writes, and returns the value now stored.
  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue?
  /// Every key and value of the suite's own domain (no registered defaults, no arguments).
  func snapshot() -> [PropertyListKey: PropertyListValue]
  /// Starts telling `handler` of changes the hub did not make (`didChangeNotification`, a simulated foreign
  /// write), on the thread that learned of them: possibly inside a write of the hub's.
  func observeExternalChanges(_ handler: @escaping @Sendable () -> Void)
  /// Starts telling `handler` of changes reported key by key (Apple platforms: key-value observing, which also
  /// reports other processes' writes), on the thread that learned of them: possibly inside a write of the hub's.
  func observeKeyChanges(_ handler: @escaping @Sendable (String) -> Void)
  /// The hub's report that `key` got its first observer (`+1`) or lost its last (`-1`): the storage reports
  /// changes of exactly the observed keys (see ``KeyRegistrations``).
  func keyObservation(_ key: String, changedBy delta: Int)
  /// The library's handling of the storage's file (a file store's on every platform; on Linux, a named suite's
  /// plist), else nil.
  var persistence: SuitePersistence? { get }
  /// Has the platform's preferences store write what this process wrote, where the library does not save the file
  /// itself (Apple platforms: the preferences daemon's); true when done, or when there is nothing to do. Called by
  /// `flush()` and `save()` of a store without ``persistence``.
  func synchronizeWithPlatform() -> Bool
  /// The `UserDefaults` instance behind the storage, if there is one.
  var userDefaults: UserDefaults? { get }
  /// The size the platform allows the suite (Apple platforms other than macOS), else nil.
  var sizeLimit: DomainSizeBudget.Limit? { get }
  /// Every key and value of the suite as its size is counted: ``snapshot()``, or, where the suite cannot be named,
  /// what can be told of it.
  func sizingSnapshot() -> [PropertyListKey: PropertyListValue]
  /// A key's value as its size is counted (``sizingSnapshot()``'s), or nil when a read cannot tell it.
  func sizingValue(forKey key: String) -> PropertyListValue??
  /// Why `write` cannot be stored under `key` (of a value of `type`), or nil: a file store refuses text that XML 1.0
  /// cannot carry, so that every reader accepts its file.
  func refusal(of write: StorageWrite, forKey key: String, type: String) -> DefaultsError?
}

/// Forwards key-by-key change reports to the hub's handler, once it is set.
final class KeyChangeForwarder: Sendable {
  private let handler = Locked<(@Sendable (String) -> Void)?>(nil)

  func set(_ newHandler: @escaping @Sendable (String) -> Void) {
    handler.withLock { $0 = newHandler }
  }

  func forward(_ key: String) {
    handler.withLock { $0 }?(key)
  }
}

extension DefaultsStorage {
  func synchronizeWithPlatform() -> Bool { true }

  func value(forKey key: String) -> PropertyListValue? {
    object(forKey: key).flatMap(PropertyListValue.init(foundationObject:))
  }

  func sizingSnapshot() -> [PropertyListKey: PropertyListValue] {
    snapshot()
  }

  func sizingValue(forKey key: String) -> PropertyListValue?? {
    .some(value(forKey: key))
  }

  func refusal(of write: StorageWrite, forKey key: String, type: String) -> DefaultsError? {
    nil
  }
}

/// A `UserDefaults` reference that may cross threads: Apple documents `UserDefaults` as thread-safe, and recent
/// Apple SDKs mark it `Sendable`, while corelibs Foundation does not. (A wrapper, not `nonisolated(unsafe)`, which
/// warns where the SDK already says `Sendable`.)
struct SendableDefaults: @unchecked Sendable {
  let instance: UserDefaults
}
