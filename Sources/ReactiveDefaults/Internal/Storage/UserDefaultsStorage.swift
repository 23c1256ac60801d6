import Foundation
import Synchronization

/// A suite in `UserDefaults`: the storage of every store made by suite name or over an instance.
///
/// On Linux, when the suite's name is known, a ``SuitePersistence`` handles its plist file (locked, atomic saves;
/// reloads on file events). On Apple platforms the preferences daemon owns the files.
final class UserDefaultsStorage: DefaultsStorage {
  /// The instance, held strongly, or weakly (``init(_:domain:holdingWeakly:)``).
  private let defaults: DefaultsReference
  /// The suite's domain, when its name is known.
  private let domain: CorelibsDomain?
  let persistence: SuitePersistence?
  private let notificationToken = Locked<NotificationToken?>(nil)
  private let keyChanges: KeyChangeForwarder
  /// The keys registered for key-value observing (Apple platforms; nil where `UserDefaults` has no KVO).
  private let registrations: KeyRegistrations?
  #if canImport(Darwin)
    private let keyValueObserver: DefaultsKeyValueObserver
  #endif
  /// Whether the storage lets its instance go (``init(_:domain:holdingWeakly:)``).
  let holdsInstanceWeakly: Bool

  /// - Parameters:
  ///   - defaults: The instance to read and write.
  ///   - domain: The suite's name when known, and whether it is the application's own (standard) domain.
  ///   - holdingWeakly: Whether the storage lets the instance go (RxCocoa's `UserDefaults.rx`, over an instance whose
  ///     suite is unknown): once it is gone, reads find nothing and writes are dropped. Only without a domain.
  init(_ defaults: UserDefaults, domain: (name: String, isStandard: Bool)?, holdingWeakly: Bool = false) {
    precondition(!holdingWeakly || domain == nil, "a suite whose file the library handles keeps its instance")
    self.defaults = DefaultsReference(defaults, weakly: holdingWeakly)
    holdsInstanceWeakly = holdingWeakly
    let domain = domain.map { CorelibsDomain.shared(name: $0.name, isStandard: $0.isStandard) }
    self.domain = domain
    let keyChanges = KeyChangeForwarder()
    self.keyChanges = keyChanges
    #if os(Linux)
      persistence = domain.map { domain in
        SuitePersistence.shared(.suite(PropertyListKey(SuiteFile(suiteName: domain.name).path))) {
          SuitePersistence(defaults: defaults, domain: domain)
        }
      }
    #else
      persistence = nil
    #endif
    #if canImport(Darwin)
      // The Apple-only part: the `NSObject` that key-value observing needs. Which keys it registers is decided by
      // the platform-neutral `KeyRegistrations`, tested on Linux through the in-memory storage.
      let observer = DefaultsKeyValueObserver(defaults) { keyChanges.forward($0) }
      keyValueObserver = observer
      registrations = KeyRegistrations(register: { observer.register($0) }, unregister: { observer.unregister($0) })
    #else
      registrations = nil
    #endif
    // corelibs answers stale reads on a cold suite used from several threads at once: the first read happens here,
    // on one thread. (Where the library handles the file, its record has loaded corelibs' copy already, after
    // checking the file, so that corelibs never reads a file that could crash or hang it; for an instance whose suite
    // is unknown, this read loads it.)
    _ = PreferencesCalls.serialized { defaults.object(forKey: "ReactiveDefaults.warmUp") }
  }

  deinit {
    registrations?.unregisterAll()
    if let token = notificationToken.withLock({ $0 }) { NotificationCenter.default.removeObserver(token.observer) }
  }

  var userDefaults: UserDefaults? { defaults.instance }

  func synchronizeWithPlatform() -> Bool {
    #if canImport(Darwin)
      // Apple's preferences daemon stores a write asynchronously: a process that is not an app (a command-line tool,
      // `rdefaults write` on macOS) must synchronize before it exits, or the write may never be stored.
      guard let instance = defaults.instance else { return true }
      return domain?.synchronize() ?? instance.synchronize()
    #else
      true
    #endif
  }

  /// The instance, held weakly, is being deallocated (RxCocoa's `deallocating`, inside `dealloc`, where weak
  /// references to it read nil already: the caller hands it over): the key-value observers added to it are removed
  /// while it still exists, as Apple requires of `addObserver(_:forKeyPath:options:context:)`.
  func instanceIsGoingAway(_ instance: UserDefaults) {
    #if canImport(Darwin)
      keyValueObserver.removeAll(from: instance)
    #endif
  }

  /// The domain whose copy this process's library reads and writes by exact names (Linux, a suite whose file the
  /// library handles), when a read or write of `key` must: the suite's name or the key has a canonically
  /// equivalent spelling (``CorelibsPreferences/needsExactString(_:)``).
  private func exactDomain(forKey key: String) -> CorelibsDomain? {
    #if os(Linux)
      guard persistence != nil, let domain, domain.exactNames || CorelibsPreferences.needsExactString(key) else {
        return nil
      }
      return domain
    #else
      nil
    #endif
  }

  func object(forKey key: String) -> Any? {
    #if os(Linux)
      if let pending = persistence?.pendingValue(forKey: key) { return object(forKey: key, pending: pending) }
    #endif
    return corelibsObject(forKey: key)
  }

  /// What corelibs (Apple: Foundation) answers for `key`.
  private func corelibsObject(forKey key: String) -> Any? {
    #if os(Linux)
      if let direct = directObject(forKey: key) { return direct }
      if let exact = exactDomain(forKey: key) { return exactObject(forKey: key, in: exact) }
    #endif
    guard let instance = defaults.instance else { return nil }
    return PreferencesCalls.serialized { instance.object(forKey: key) }
  }

  #if os(Linux)
    /// Reads since the last write through this storage. After a write, corelibs' `object(forKey:)` rebuilds its
    /// merged view of every domain at the next read (10 ms at 10,000 keys): so the reads right after a write go to
    /// the suite's own domain directly (about 5 µs whatever its size), and once reads run on without writes, one
    /// `object(forKey:)` rebuilds the view and the faster warm path takes over again.
    private let readsSinceWrite = Atomic<Int>(Int.max / 2)
    static let directReadsAfterWrite = 64

    /// The value straight from the suite's own domain, when that is what `object(forKey:)` would return: the key is
    /// in that domain and not overridden by a launch argument. nil: ask `object(forKey:)`.
    private func directObject(forKey key: String) -> Any? {
      guard persistence != nil, let domain else { return nil }
      // A key with a canonically equivalent spelling is always read from the suite's own domain, with a key
      // CoreFoundation compares exactly: corelibs' merged view compares keys as Swift strings.
      let exact = exactDomain(forKey: key) != nil
      // A plain load first: reads far from any write (the common case) pay no read-modify-write.
      guard
        exact
          || (readsSinceWrite.load(ordering: .relaxed) < Self.directReadsAfterWrite
            && readsSinceWrite.add(1, ordering: .relaxed).newValue <= Self.directReadsAfterWrite),
        defaults.instance?.volatileDomain(forName: UserDefaults.argumentDomain)[key] == nil
      else { return nil }
      guard let object = domain.value(forKey: key) else { return nil }
      if exact {
        // Whatever its size: the merged view could hand out the other spelling's value.
        return PropertyListValue(foundationObject: object)?.foundationObject
      }
      // Small scalars only. corelibs bridges its own objects to Swift values byte by byte (an `NSData` of a few MiB
      // takes seconds), where `object(forKey:)` hands out Swift values at once: large values, arrays and
      // dictionaries are left to it.
      switch object {
      case is NSNumber, is NSDate: return object
      case let text as NSString where text.length <= Self.largestDirectString: return object
      case let data as NSData where data.length <= Self.largestDirectString:
        return Data(bytes: data.bytes, count: data.length)
      default: return nil
      }
    }

    /// What `object(forKey:)` returns, found with the key and the suite's name as strings CoreFoundation compares
    /// exactly (``CorelibsPreferences/needsExactString(_:)``): corelibs' own lookups compare them as Swift strings,
    /// in its caches of domains and of applications' search lists too, which can find the other spelling of a key or
    /// of the suite's name. Launch arguments first, then the suite's own domain, the global domain, and registered
    /// defaults, as corelibs looks.
    private func exactObject(forKey key: String, in domain: CorelibsDomain) -> Any? {
      if let argument = defaults.instance?.volatileDomain(forName: UserDefaults.argumentDomain)[key] { return argument }
      let found = domain.value(forKey: key) ?? CorelibsPreferences.globalValue(forKey: key)
      if let found { return PropertyListValue(foundationObject: found)?.foundationObject }
      return defaults.instance?.volatileDomain(forName: UserDefaults.registrationDomain)[key]
    }

    /// A read of a key this process wrote and has not finished saving (``SuitePersistence/pendingValue(forKey:)``):
    /// answered from the library's own record of that write, never from corelibs.
    ///
    /// corelibs may answer from another copy of the suite, loaded from the file without the write: another thread's
    /// `getpwuid` (any thread of the process: the app's, a logging library's) rewrites the user name corelibs names
    /// its copies by on every call (see ``PreferencesCalls``). So the write decides, as corelibs would have with its
    /// own copy: a launch argument still wins; then the value written; a removal leaves what the other domains hold
    /// (the global domain, then the registered defaults). A plain `UserDefaults` write of the same key made in this
    /// process since, which corelibs does not announce, is read once the library's write is saved (at most 100 ms
    /// later, or at `flush()`), as Gotchas documents.
    private func object(forKey key: String, pending: PropertyListValue?) -> Any? {
      let instance = defaults.instance
      return instance?.volatileDomain(forName: UserDefaults.argumentDomain)[key] ?? pending?.foundationObject
        ?? CorelibsPreferences.globalValue(forKey: key)
        ?? instance?.volatileDomain(forName: UserDefaults.registrationDomain)[key]
    }

    /// The longest string (in UTF-16 units) or data (in bytes) a direct read hands out.
    static let largestDirectString = 4096
  #endif

  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue? {
    // An instance held weakly and gone: nothing to write to.
    guard let instance = defaults.instance else { return nil }
    #if os(Linux)
      readsSinceWrite.store(0, ordering: .relaxed)
    #endif
    switch write {
    case .set(let value):
      #if os(Linux)
        // A name with a canonically equivalent spelling (the suite's, the key's, or a key inside the value) goes
        // straight to CoreFoundation, as a string it compares exactly (``CorelibsPreferences/needsExactString(_:)``);
        // every other write goes through `UserDefaults.set`, as it always has.
        if persistence != nil, let domain,
          domain.exactNames || CorelibsPreferences.needsExactString(key) || value.hasExactKeys,
          domain.set(value.corelibsObject, forKey: key)
        {
          return value
        }
      #endif
      let object = value.foundationObject
      PreferencesCalls.serialized { instance.set(object, forKey: key) }
      return value
    case .remove:
      #if os(Linux)
        if let exact = exactDomain(forKey: key), exact.set(nil, forKey: key) {
          return nil
        }
      #endif
      PreferencesCalls.serialized { instance.removeObject(forKey: key) }
      return nil
    case .url(let url):
      #if canImport(Darwin)
        // Apple's own form (a keyed archive, home folder abbreviated as `~`), which Apple's `url(forKey:)` reads.
        instance.set(url, forKey: key)
        return value(forKey: key)
      #else
        // corelibs' `set(_: URL?)` keeps only the path: the library writes the keyed archive itself.
        let archive = try? url.propertyListValue()
        return apply(archive.map(StorageWrite.set) ?? .remove, forKey: key)
      #endif
    }
  }

  func snapshot() -> [PropertyListKey: PropertyListValue] {
    guard let instance = defaults.instance, let domain = self.domain?.dictionary(of: instance) else { return [:] }
    if let entries = try? SuiteFile.entries(domain) { return entries }
    // A value that is not a property-list value (a plain `UserDefaults` write of this process): the others.
    var entries: [PropertyListKey: PropertyListValue] = [:]
    domain.enumerateKeysAndObjects(options: []) { key, object, _ in
      if let name = key as? String, let value = PropertyListValue(foundationObject: object) {
        entries[PropertyListKey(name)] = value
      }
    }
    return entries
  }

  var sizeLimit: DomainSizeBudget.Limit? { DomainSizeBudget.platform }

  /// The suite's own domain when it is named; else (an instance of a suite Apple platforms do not name) every
  /// key the instance reads less those of the registration, argument and global domains (a key the suite shares
  /// with one of them is left out).
  func sizingSnapshot() -> [PropertyListKey: PropertyListValue] {
    guard domain == nil, let instance = defaults.instance else { return snapshot() }
    var found = PreferencesCalls.serialized { instance.dictionaryRepresentation() }
    for other in [UserDefaults.registrationDomain, UserDefaults.argumentDomain] {
      for key in instance.volatileDomain(forName: other).keys { found[key] = nil }
    }
    let global = PreferencesCalls.serialized { instance.persistentDomain(forName: UserDefaults.globalDomain) }
    for key in (global ?? [:]).keys { found[key] = nil }
    var entries: [PropertyListKey: PropertyListValue] = [:]
    for (key, object) in found {
      if let value = PropertyListValue(foundationObject: object) { entries[PropertyListKey(key)] = value }
    }
    return entries
  }

  /// A read gives the launch argument or registered default of a key the suite lacks, which the suite's size does
  /// not count: such a key cannot be told.
  func sizingValue(forKey key: String) -> PropertyListValue?? {
    guard let instance = defaults.instance else { return nil }
    for other in [UserDefaults.argumentDomain, UserDefaults.registrationDomain]
    where instance.volatileDomain(forName: other)[key] != nil {
      return nil
    }
    return .some(value(forKey: key))
  }

  func observeKeyChanges(_ handler: @escaping @Sendable (String) -> Void) {
    keyChanges.set(handler)
  }

  func keyObservation(_ key: String, changedBy delta: Int) {
    registrations?.change(key, by: delta)
  }

  func observeExternalChanges(_ handler: @escaping @Sendable () -> Void) {
    guard let instance = defaults.instance else { return }
    // corelibs' center keeps the object it filters on: an instance held weakly is compared when a notification
    // comes instead.
    let reference = defaults
    let token = NotificationCenter.default.addObserver(
      forName: UserDefaults.didChangeNotification, object: holdsInstanceWeakly ? nil : instance, queue: nil
    ) { notification in
      guard let instance = reference.instance, (notification.object as AnyObject?) === instance else { return }
      handler()
    }
    notificationToken.withLock { $0 = NotificationToken(observer: token) }
  }
}

/// A `UserDefaults` instance held strongly, or weakly (then nil once it is gone).
private final class DefaultsReference: @unchecked Sendable {  // both set once, in init (`weakInstance` then zeroed)
  private let strongInstance: UserDefaults?
  private weak var weakInstance: UserDefaults?

  init(_ instance: UserDefaults, weakly: Bool) {
    strongInstance = weakly ? nil : instance
    weakInstance = instance
  }

  var instance: UserDefaults? { strongInstance ?? weakInstance }
}

/// The token `NotificationCenter` returns: an immutable handle, only ever passed back to `removeObserver`.
private struct NotificationToken: @unchecked Sendable {
  let observer: any NSObjectProtocol
}
