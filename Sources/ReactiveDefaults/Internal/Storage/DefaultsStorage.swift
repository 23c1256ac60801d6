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
/// Implementations: ``UserDefaultsStorage`` (on Linux with a ``SuitePersistence`` that owns the plist file; on
/// Apple platforms the preferences daemon owns it) and ``MemoryStorage``. The hub calls ``apply(_:forKey:)``, which
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
  /// The library's handling of the suite's file (Linux, a suite whose name is known), else nil.
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

extension PropertyListValue {
  /// The first text in the value (a string, or a dictionary's key, at any depth) that XML 1.0 cannot carry: a control
  /// character other than tab, line feed and carriage return (U+0000–U+0008, U+000B, U+000C, U+000E–U+001F), or
  /// U+FFFE / U+FFFF.
  var textXMLCannotCarry: String? {
    switch self {
    case .string(let text): text.canBeCarriedByXML ? nil : text
    case .array(let items):
      items.lazy.compactMap(\.textXMLCannotCarry).first
    case .dictionary(let entries):
      entries.lazy.compactMap { key, value in key.string.canBeCarriedByXML ? value.textXMLCannotCarry : key.string }
        .first
    case .bool, .integer, .real, .date, .data: nil
    }
  }
}

extension String {
  /// Whether XML 1.0 can carry the text (every character is a `Char` of the XML 1.0 grammar).
  var canBeCarriedByXML: Bool {
    unicodeScalars.allSatisfy { scalar in
      switch scalar.value {
      case 0x09, 0x0A, 0x0D: true
      case 0x00...0x1F, 0xFFFE, 0xFFFF: false
      default: true
      }
    }
  }
}

/// A `UserDefaults` reference that may cross threads: Apple documents `UserDefaults` as thread-safe, and recent
/// Apple SDKs mark it `Sendable`, while corelibs Foundation does not. (A wrapper, not `nonisolated(unsafe)`, which
/// warns where the SDK already says `Sendable`.)
struct SendableDefaults: @unchecked Sendable {
  let instance: UserDefaults
}
