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
    /// Reports changes of observed keys one by one, as Apple's key-value observing does: inside every write of
    /// such a key, and for writes of other processes (``MemoryStorage/writeFromOutside(_:forKey:)``). Keys it cannot
    /// address (with `.` or `@`) are not reported.
    var reportsKeyChanges = false
    /// Stores URLs as Apple's `set(_: URL?, forKey:)` does: a keyed archive in which a file in the home folder is
    /// `~/…`, relative to the working directory.
    var storesURLsAsApple = false
    /// Refuses to grow past an Apple platform's size limit, as the library does there (``DomainSizeBudget``).
    var sizeLimit: DomainSizeBudget.Limit?

    /// The plain in-memory store.
    static let isolated = Behavior()
  }

  private let values: Locked<[PropertyListKey: PropertyListValue]>
  private let behavior: Behavior
  private let externalChange = Locked<(@Sendable () -> Void)?>(nil)
  private let keyChanges = KeyChangeForwarder()
  /// The keys registered for reports (the bookkeeping Apple platforms use for key-value observing).
  let registrations = KeyRegistrations(register: { _ in }, unregister: { _ in })

  init(_ initial: [PropertyListKey: PropertyListValue] = [:], behavior: Behavior = .isolated) {
    values = Locked(initial)
    self.behavior = behavior
  }

  func object(forKey key: String) -> Any? {
    values.withLock { $0[PropertyListKey(key)] }?.foundationObject
  }

  func value(forKey key: String) -> PropertyListValue? {
    values.withLock { $0[PropertyListKey(key)] }
  }

  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue? {
    let stored: PropertyListValue?
    switch write {
    case .set(let value): stored = value
    case .remove: stored = nil
    case .url(let url): stored = behavior.storesURLsAsApple ? Self.appleArchive(of: url) : try? url.propertyListValue()
    }
    values.withLock { $0[PropertyListKey(key)] = stored }
    reportKeyChange(key)
    behavior.onWrite?(key)
    if behavior.postsChangesInsideWrites { externalChange.withLock { $0 }?() }
    return stored
  }

  /// What Apple's `set(_: URL?, forKey:)` stores: the URL archived, a file URL's home folder abbreviated as `~`.
  private static func appleArchive(of url: URL) -> PropertyListValue? {
    let home = NSHomeDirectory()
    guard url.isFileURL, url.path.hasPrefix(home + "/") else { return try? url.propertyListValue() }
    let abbreviated = NSURL(
      fileURLWithPath: "~" + url.path.dropFirst(home.count),
      relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true))
    return (try? NSKeyedArchiver.archivedData(withRootObject: abbreviated, requiringSecureCoding: true)).map {
      .data($0)
    }
  }

  func snapshot() -> [PropertyListKey: PropertyListValue] {
    values.withLock { $0 }
  }

  func observeExternalChanges(_ handler: @escaping @Sendable () -> Void) {
    externalChange.withLock { $0 = handler }
  }

  /// Another process's write: the value changes and, as on Apple platforms, only key-value observing reports it
  /// (Apple posts `didChangeNotification` for writes of the current process only), on the calling thread.
  func writeFromOutside(_ value: PropertyListValue?, forKey key: String) {
    values.withLock { $0[PropertyListKey(key)] = value }
    reportKeyChange(key)
  }

  /// A plain `UserDefaults` write in this process, not through the hub: reported by key-value observing and by
  /// the change notification, both inside the write.
  func writeInProcess(_ value: PropertyListValue?, forKey key: String) {
    values.withLock { $0[PropertyListKey(key)] = value }
    reportKeyChange(key)
    externalChange.withLock { $0 }?()
  }

  private func reportKeyChange(_ key: String) {
    if behavior.reportsKeyChanges && registrations.registeredKeys.contains(PropertyListKey(key)) {
      keyChanges.forward(key)
    }
  }

  func observeKeyChanges(_ handler: @escaping @Sendable (String) -> Void) {
    keyChanges.set(handler)
  }

  func keyObservation(_ key: String, changedBy delta: Int) {
    if behavior.reportsKeyChanges { registrations.change(key, by: delta) }
  }

  var persistence: SuitePersistence? { nil }
  var userDefaults: UserDefaults? { nil }
  var sizeLimit: DomainSizeBudget.Limit? { behavior.sizeLimit }
}
