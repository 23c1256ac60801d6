import Foundation
import Synchronization

/// Finds the one ``ChangeHub`` of a suite in this process, however the store was made: by suite name, over the
/// library's own instance, over any other instance of the same suite, or over `UserDefaults.standard`.
///
/// Hubs are held weakly: a hub lives while a store, property or observation uses it, and a later lookup makes a
/// new one. A hub is built outside the registry's lock (building one checks the suite's file, under its lock);
/// when two threads build one for the same suite, the first inserted wins and the other is discarded.
enum HubRegistry {
  private enum Key: Hashable {
    /// By exact characters, as CoreFoundation names a domain (and the file system its file): two names that differ
    /// only by Unicode normalization are two suites.
    case suite(PropertyListKey)
    /// A file store's file, by its one spelling (``SuiteFile/canonicalPath(_:)``), exactly.
    case file(PropertyListKey)
    case instance(ObjectIdentifier)
    /// A hub found by no lookup, listed only so that other hubs' writes reach it (``didWrite(_:through:)``).
    case unlisted(ObjectIdentifier)
  }

  private struct WeakHub {
    weak var hub: ChangeHub?
  }

  private static let hubs = Locked<[Key: WeakHub]>([:])
  /// Live hubs whose suite is unknown: while there is one, every write is re-checked by the other hubs.
  static let unknownSuiteHubs = Atomic<Int>(0)

  /// The hub of a named suite, made (with its `UserDefaults`) on first use; nil if Foundation refuses the name.
  static func hub(suiteName: String) -> ChangeHub? {
    if let hub = lookUp([.suite(PropertyListKey(suiteName))]) { return hub }
    guard let defaults = UserDefaults(suiteName: suiteName) else { return nil }
    let candidate = ChangeHub(
      storage: UserDefaultsStorage(defaults, domain: (suiteName, false)), suiteName: suiteName, suiteIsKnown: true)
    return insert(candidate, keys: [.suite(PropertyListKey(suiteName)), .instance(ObjectIdentifier(defaults))])
  }

  /// The hub of a file store's file at `path` (absolute), made on first use: two stores over one file, however its
  /// path is spelled, share it.
  static func hub(fileAt path: String) -> ChangeHub {
    let canonical = SuiteFile.canonicalPath(path)
    if let hub = lookUp([.file(PropertyListKey(canonical))]) { return hub }
    let url = URL(fileURLWithPath: canonical)
    let file = SuiteFile(
      folder: url.deletingLastPathComponent().path, fileName: url.lastPathComponent, system: .posix)
    let candidate = ChangeHub(storage: FileStorage(file: file), suiteName: nil, suiteIsKnown: true)
    return insert(candidate, keys: [.file(PropertyListKey(canonical))])
  }

  /// The hub of an existing `UserDefaults` instance: the hub of its suite when the suite can be told, else one of
  /// the instance's own.
  ///
  /// - Parameter suiteIsTold: false to make the hub as on Apple platforms, where the suite cannot be told (tests).
  static func hub(for defaults: UserDefaults, suiteIsTold: Bool = true) -> ChangeHub {
    let domain = suiteIsTold ? domain(of: defaults) : nil
    // Only the hub's own instance is registered by identity: it keeps the instance alive, so no other instance can
    // take its address.
    if let domain, let hub = lookUp([.suite(PropertyListKey(domain.name))]) { return hub }
    if let hub = lookUp([.instance(ObjectIdentifier(defaults))]) { return hub }
    let candidate = ChangeHub(
      storage: UserDefaultsStorage(defaults, domain: domain),
      suiteName: domain.flatMap { $0.isStandard ? nil : $0.name },
      suiteIsKnown: domain != nil)
    return insert(
      candidate,
      keys: (domain.map { [.suite(PropertyListKey($0.name))] } ?? []) + [.instance(ObjectIdentifier(defaults))])
  }

  /// The hub for a store that must not keep `defaults` alive (RxCocoa's `UserDefaults.rx`): the suite's own hub
  /// when the suite can be told (it reads and writes through an instance of its own, or `UserDefaults.standard`,
  /// which lives as long as the process), else a new hub over the instance held weakly, which no lookup finds (a
  /// later instance at the same address must not get it).
  ///
  /// - Parameter suiteIsTold: false to make the hub as on Apple platforms, where the suite cannot be told (tests).
  static func hubLettingGo(of defaults: UserDefaults, suiteIsTold: Bool = true) -> ChangeHub {
    if let domain = suiteIsTold ? domain(of: defaults) : nil {
      if domain.isStandard { return hub(for: UserDefaults.standard) }
      if let hub = hub(suiteName: domain.name) { return hub }
    }
    let candidate = ChangeHub(
      storage: UserDefaultsStorage(defaults, domain: nil, holdingWeakly: true), suiteName: nil, suiteIsKnown: false)
    return insert(candidate, keys: [.unlisted(ObjectIdentifier(candidate))])
  }

  /// The suite of an instance. Foundation does not say; on Linux, corelibs' `UserDefaults` is Swift and keeps it
  /// in a stored property that reflection reads. Where that fails (Apple platforms), the suite is unknown, except for
  /// `UserDefaults.standard`, whose persistent domain is named by the app's bundle identifier (Apple's
  /// `persistentDomain(forName:)` page: "Specify your app's bundle identifier to retrieve any app-specific keys"), so
  /// that `keys`, `removeAll()` and `removeSuite()` act on it there too.
  private static func domain(of defaults: UserDefaults) -> (name: String, isStandard: Bool)? {
    if defaults === UserDefaults.standard { return (SuiteFile.standardDomainName, true) }
    #if os(Linux)
      for child in Mirror(reflecting: defaults).children where child.label == "suite" {
        guard let suite = child.value as? String? else { return nil }
        guard let suite else { return (SuiteFile.standardDomainName, true) }
        return DefaultsStore.isValidSuiteName(suite) ? (suite, false) : nil
      }
    #endif
    return nil
  }

  private static func lookUp(_ keys: [Key]) -> ChangeHub? {
    hubs.withLock { hubs in
      for key in keys { if let hub = hubs[key]?.hub { return hub } }
      return nil
    }
  }

  /// Inserts a hub built outside the lock, unless another was inserted meanwhile: then that one is returned, and
  /// the candidate is released after the lock.
  private static func insert(_ candidate: ChangeHub, keys: [Key]) -> ChangeHub {
    hubs.withLock { hubs in
      // Few suites live in a process; dropping dead entries on each insertion keeps the table small.
      hubs = hubs.filter { $0.value.hub != nil }
      for key in keys { if let existing = hubs[key]?.hub { return existing } }
      for key in keys { hubs[key] = WeakHub(hub: candidate) }
      return candidate
    }
  }

  /// Tells the other hubs that `keys` were written through `hub`, when any hub's suite is unknown (it may be the
  /// same suite).
  static func didWrite(_ keys: [String], through hub: ChangeHub) {
    guard unknownSuiteHubs.load(ordering: .relaxed) > 0, hub.storage.userDefaults != nil else { return }
    let others = hubs.withLock { hubs in
      var seen = Set<ObjectIdentifier>([ObjectIdentifier(hub)])
      return hubs.values.compactMap(\.hub).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }
    for other in others where !(other.suiteIsKnown && hub.suiteIsKnown) { other.recheck(keys) }
  }
}
