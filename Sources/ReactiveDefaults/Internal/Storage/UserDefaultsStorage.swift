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

  /// What corelibs (Apple: Foundation) answers for `key`: the same as plain `UserDefaults`, whoever wrote it last in
  /// this process, at once.
  func object(forKey key: String) -> Any? {
    #if os(Linux)
      if let domain, let written = domain.writes.reloadedValue(forKey: key, reading: domain.object(forKey:)) {
        return object(forKey: key, reloadedAway: written)
      }
      // A suite whose file the library handles is read as corelibs looks, with the suite's own domain read from
      // corelibs' object for it: never through a domain found by a name built from `getpwuid`, which another
      // thread of the process (the app's, not the library's) can garble meanwhile, sending the read to a stray copy
      // loaded from the file (an older value; BusyProcessTests' threads do that).
      if persistence != nil, let domain { return exactObject(forKey: key, in: domain) }
    #endif
    guard let instance = defaults.instance else { return nil }
    return PreferencesCalls.serialized { instance.object(forKey: key) }
  }

  #if os(Linux)
    /// What `object(forKey:)` returns, with the suite's own domain read from corelibs' object for it
    /// (``CorelibsDomain/value(forKey:)``, which no other thread's `getpwuid` can send elsewhere) and the key as a
    /// string CoreFoundation compares exactly where it must (``CorelibsPreferences/needsExactString(_:)``: corelibs'
    /// own lookups compare keys and suite names as Swift strings, which can find the other spelling). Launch
    /// arguments first, then the suite's own domain, the global domain, and registered defaults, as corelibs looks.
    ///
    /// A key the suite's own domain lacks is asked of `UserDefaults.object(forKey:)` (for a key whose spelling need
    /// not be exact): corelibs keeps registered defaults in a table of its own that only that method reads (not the
    /// registration domain's volatile dictionary), and there the suite's domain holds nothing to read stale.
    private func exactObject(forKey key: String, in domain: CorelibsDomain) -> Any? {
      let instance = defaults.instance
      if let argument = instance?.volatileDomain(forName: UserDefaults.argumentDomain)[key] { return argument }
      if let own = domain.value(forKey: key) { return PropertyListValue(foundationObject: own)?.foundationObject }
      guard exactDomain(forKey: key) != nil else {
        guard let instance else { return nil }
        return PreferencesCalls.serialized { instance.object(forKey: key) }
      }
      if let global = CorelibsPreferences.globalValue(forKey: key) {
        return PropertyListValue(foundationObject: global)?.foundationObject
      }
      return instance?.volatileDomain(forName: UserDefaults.registrationDomain)[key]
    }

    /// A read of a key whose write of the library's corelibs lost when it loaded the key again
    /// (``WritesInCopy/reloadedValue(forKey:reading:)``), as corelibs would answer with its copy holding the write: a
    /// launch argument wins; then the value written; a removal leaves what the global domain or the registered
    /// defaults hold.
    private func object(forKey key: String, reloadedAway written: PropertyListValue?) -> Any? {
      let instance = defaults.instance
      return instance?.volatileDomain(forName: UserDefaults.argumentDomain)[key] ?? written?.foundationObject
        ?? CorelibsPreferences.globalValue(forKey: key)
        ?? instance?.volatileDomain(forName: UserDefaults.registrationDomain)[key]
    }

  #endif

  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue? {
    // An instance held weakly and gone: nothing to write to.
    guard let instance = defaults.instance else { return nil }
    switch write {
    case .set(let value):
      #if os(Linux)
        // A name with a canonically equivalent spelling (the suite's, the key's, or a key inside the value) goes
        // straight to CoreFoundation, as a string it compares exactly (``CorelibsPreferences/needsExactString(_:)``);
        // every other write goes through `UserDefaults.set`, as it always has.
        if persistence != nil, let domain,
          domain.exactNames || CorelibsPreferences.needsExactString(key) || value.hasExactKeys
        {
          if confirming(value, forKey: key, { domain.set(value.corelibsObject, forKey: key) }) { return value }
        }
        // Every other write of a suite whose file the library handles: corelibs' `UserDefaults.set` minus its check,
        // which bridges the value to Swift (a 10 MB data value: seconds, inside the library's turn at corelibs).
        if persistence != nil, let domain {
          let object = value.corelibsObject
          if confirming(value, forKey: key, { domain.setAsUserDefaults(object, forKey: key) }) { return value }
        }
      #endif
      let object = value.foundationObject
      confirming(value, forKey: key) {
        PreferencesCalls.serialized { instance.set(object, forKey: key) }
        return true
      }
      return value
    case .remove:
      #if os(Linux)
        if let exact = exactDomain(forKey: key) {
          if confirming(nil, forKey: key, { exact.set(nil, forKey: key) }) { return nil }
        }
      #endif
      confirming(nil, forKey: key) {
        PreferencesCalls.serialized { instance.removeObject(forKey: key) }
        return true
      }
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

  /// Runs `write` (of `value`, nil: a removal, to `key`) until it reached the domain's object that reads see (Linux,
  /// where the library handles the suite's file): corelibs finds the object to write by a name built from
  /// `getpwuid`'s buffer, which another thread can garble meanwhile, and the write then goes to another copy of the
  /// suite (``CorelibsPreferences/domainObject(_:)``). A write that reached it replaced the object held for the key
  /// (corelibs copies each value it stores); one that went astray left the object as it was. (Another thread's write
  /// of the key meanwhile replaces it too: the two were concurrent, and either may be last.)
  /// `write` returns false when it could write nothing (then nor does this).
  @discardableResult
  private func confirming(_ value: PropertyListValue?, forKey key: String, _ write: () -> Bool) -> Bool {
    #if os(Linux)
      guard persistence != nil, let domain else { return write() }
      let before = domain.value(forKey: key).map { $0 as AnyObject }
      for _ in 0..<100 {
        guard write() else { return false }
        let now = domain.value(forKey: key).map { $0 as AnyObject }
        // Changed, or unchanged because the domain already held the value (corelibs skips an equal write). (A
        // changed object is taken for ours, not compared with the value: corelibs' copy of a value can differ from
        // it, a dictionary whose keys differ only by Unicode normalization keeping one. So a plain write of another
        // thread landing between this write and this read counts as ours: a window of a few microseconds.)
        if now !== before || now.flatMap(CorelibsDomain.propertyListValue(of:)) == value {
          domain.writes.noteWrite(forKey: key, value: value, left: now, overtaken: false, unsaved: now !== before)
          return true
        }
      }
      return true
    #else
      write()
    #endif
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
