import Foundation
import Synchronization

/// corelibs' cached copy of one suite's preferences domain, and what that copy is: the one place that knows whether
/// memory is the file (Linux; on Apple platforms the preferences daemon owns both, and the domain only names the suite
/// for `flush()`/`save()` (``ApplePreferences/synchronize(_:)``) and for reading it whole
/// (``ApplePreferences/persistentDomain(of:name:)``)).
///
/// corelibs loads a domain's file once and serves every read from that copy until it is told to drop it
/// (`CFPreferencesSynchronize` with nothing unsaved), so the rule "memory is the file at stamp S, or known not to be"
/// holds only if every drop and load goes through here and records what it made the copy (``memory``): a suite's
/// record calls ``reloadCopy(file:)`` or ``load()`` holding the suite's lock, then records the stamp it took before.
final class CorelibsDomain: Sendable {
  /// The suite's name: the domain's, or the application's own for the standard domain.
  let name: String
  /// Whether the domain is the application's own (`UserDefaults.standard`).
  let isStandard: Bool
  /// Whether reads and writes must name the domain, or a key, with strings CoreFoundation compares exactly
  /// (Linux: the suite's name has a canonically equivalent spelling; ``CorelibsPreferences/needsExactString(_:)``).
  let exactNames: Bool
  private let copy = Locked(Memory.untrusted)

  init(name: String, isStandard: Bool) {
    self.name = name
    self.isStandard = isStandard
    #if os(Linux)
      exactNames = !isStandard && CorelibsPreferences.needsExactString(name)
    #else
      exactNames = false
    #endif
  }

  /// The domain's one instance in this process: corelibs keeps one copy of a domain per process, so what that copy
  /// is must be recorded once too. (Two hubs built at once for one suite, the loser then discarded, each opened the
  /// suite: the loser's load changed the copy that the winner's record described.)
  static func shared(name: String, isStandard: Bool) -> CorelibsDomain {
    instances.withLock { instances in
      let key = Key(name: PropertyListKey(name), isStandard: isStandard)
      if let existing = instances[key]?.domain { return existing }
      instances = instances.filter { $0.value.domain != nil }
      let made = CorelibsDomain(name: name, isStandard: isStandard)
      instances[key] = WeakDomain(domain: made)
      return made
    }
  }

  private struct Key: Hashable {
    var name: PropertyListKey
    var isStandard: Bool
  }

  private struct WeakDomain {
    weak var domain: CorelibsDomain?
  }

  private static let instances = Locked<[Key: WeakDomain]>([:])

  /// What corelibs' copy of the domain is.
  typealias Memory = MemoryOfFile

  /// What the copy is, as last recorded.
  var memory: Memory { copy.withLock { $0 } }

  /// Records what the copy is now (call it holding the suite's lock, right after the load or save that made it so).
  func record(_ memory: Memory) {
    copy.withLock { $0 = memory }
  }

  /// Whether the copy is the file whose stamp is `stamp` (nil: no file).
  func isFile(_ stamp: SuiteFile.Stamp?) -> Bool {
    copy.withLock { $0.isFile(stamp) }
  }

  // MARK: corelibs' copy

  /// The domain as CoreFoundation's functions take it: nil names the application's own.
  private var preferencesName: String? { isStandard ? nil : name }

  /// Has corelibs save this domain alone (`UserDefaults.synchronize()` saves every domain of the process, each in
  /// place). With nothing unsaved it writes nothing: it only drops its copy, so that the next read loads the file.
  /// Returns false when corelibs' save failed: its dirty list is then as it was.
  ///
  /// A failure is tried once more: corelibs deletes the file of an emptied domain by checking that it exists, then
  /// removing it, which fails when something else removed it in between; a second try finds no file and succeeds.
  /// (A failed save leaves corelibs' dirty list as it was, so trying again is safe.)
  ///
  /// Each save is bracketed by looks at the keys the library wrote and has not saved (``WritesInCopy``), which tell a
  /// plain `UserDefaults` write of this process from a key corelibs loaded again. `file` says what the file holds
  /// now, asked only when a write of the library's is one corelibs keeps no record of (the suite's record passes it,
  /// holding the suite's lock: ``SuiteFileRecord/fileBeforeSynchronize()``; unknown, a changed value counts as
  /// loaded).
  ///
  /// On Apple platforms: has the preferences daemon store what this process wrote to the domain
  /// (``ApplePreferences/synchronize(_:)``).
  func synchronize(file: () -> WritesInCopy.FileBefore = { .unknown }) -> Bool {
    #if os(Linux)
      writes.beforeSynchronize(reading: object(forKey:))
      let before = writes.hasWritesCorelibsSkipped ? file() : .unknown
      Self.insideSynchronize.withLock { $0[name] }?()
      let saved =
        CorelibsPreferences.synchronize(domain: preferencesName)
        || CorelibsPreferences.synchronize(domain: preferencesName)
      writes.afterSynchronize(reading: object(forKey:), saved: saved, file: before)
      return saved
    #elseif canImport(Darwin)
      return ApplePreferences.synchronize(preferencesName)
    #else
      return true
    #endif
  }

  /// Tests: run inside a synchronize of the suite named by the key, between the look at the library's writes and
  /// corelibs' save (where another thread's plain write can land).
  static let insideSynchronize = Locked<[String: @Sendable () -> Void]>([:])

  /// Drops the copy, twice (run it while no write of ours is in progress: a write between the two would make the
  /// second an in-place save with no journal behind it). Returns false when corelibs had something to save and could
  /// not (its copy then stays as it was).
  ///
  /// `CFPreferencesSynchronize` marks the merged views (what `UserDefaults.object(forKey:)` reads) stale *before* it
  /// drops the domain's copy: a read on another thread in between rebuilds a view from the old copy, and that view
  /// then outlives the reload, until the next change. So the drop runs twice: a view built in the first one's window
  /// is marked stale by the second, and one built in the second's is built from a copy loaded from the file.
  func dropCopy(file: () -> WritesInCopy.FileBefore) -> Bool {
    synchronize(file: file) && synchronize(file: file)
  }

  /// Has corelibs read the file now rather than at the next read (call it holding the suite's lock: no process using
  /// the library rewrites the file meanwhile, so corelibs never loads a file another process's save is rewriting in
  /// place, which would read as an empty suite).
  func load() {
    #if os(Linux)
      _ = CorelibsPreferences.value(forKey: "ReactiveDefaults.load", domain: preferencesName)
    #endif
  }

  /// Makes the copy the file as it is now, and every merged view of it too: ``dropCopy(file:)``, then ``load()`` (call it
  /// holding the suite's lock, with nothing unsaved in corelibs: else corelibs saves it first). Returns false when
  /// corelibs could not save what it held. The caller records what the copy is.
  @discardableResult
  func reloadCopy(file: () -> WritesInCopy.FileBefore) -> Bool {
    guard dropCopy(file: file) else { return false }
    load()
    return true
  }

  /// The address of the object corelibs serves the domain from (``CorelibsPreferences/domainObject(_:)``), looked up
  /// at the first read: 0 before, 1 when it could not be found (reads then name the domain at each call).
  private let objectAddress = Atomic<UInt>(0)

  /// The value of `key` in the domain's own copy (not the merged view); nil when absent, or not Linux. Read from the
  /// domain's object itself where it was found, so that no other thread's `getpwuid` can send the read to another
  /// copy of the suite (``CorelibsPreferences/domainObject(_:)``): what it reads is what this process last wrote,
  /// through the library or plain `UserDefaults`, or what the file held.
  func value(forKey key: String) -> Any? {
    #if os(Linux)
      var address = objectAddress.load(ordering: .acquiring)
      if address == 0 {
        address = CorelibsPreferences.domainObject(preferencesName).map { UInt(bitPattern: $0) } ?? 1
        objectAddress.store(address, ordering: .releasing)
      }
      if let object = UnsafeRawPointer(bitPattern: address), address != 1 {
        return CorelibsPreferences.value(forKey: key, inDomainObject: object)
      }
      return CorelibsPreferences.value(forKey: key, domain: preferencesName)
    #else
      nil
    #endif
  }

  /// The library's unsaved writes as the copy holds them (``UserDefaultsStorage``'s confirmed writes), for a save to
  /// keep a plain `UserDefaults` write of this process made after one of the library's.
  let writes = WritesInCopy(converting: CorelibsDomain.propertyListValue(of:))

  /// An object the copy holds as a property-list value, each dictionary key exactly as CoreFoundation holds it (its
  /// collections may not bridge as `NSDictionary`, and a Swift dictionary merges keys that differ only by Unicode
  /// normalization).
  static func propertyListValue(of object: AnyObject) -> PropertyListValue? {
    #if os(Linux)
      if let collection = CorelibsPreferences.collectionValue(of: object) { return collection }
    #endif
    return PropertyListValue(foundationObject: object)
  }

  /// ``value(forKey:)`` as the object the copy holds, to be compared by identity.
  func object(forKey key: String) -> AnyObject? {
    value(forKey: key).map { $0 as AnyObject }
  }

  /// `writes` (the library's, taken by a save) with each key that a plain write of this process changed since the
  /// library wrote it given the value the copy holds now (``WritesInCopy``): in a process, the last write wins,
  /// whichever API made it.
  func withLaterPlainWrites(_ writes: [PropertyListKey: PropertyListValue?]) -> [PropertyListKey: PropertyListValue?] {
    self.writes.withLaterPlainWrites(writes, reading: object(forKey:))
  }

  /// Whether the copy holds no key (false where there is no corelibs, or its functions cannot be found).
  var isEmpty: Bool {
    #if os(Linux)
      CorelibsPreferences.domain(preferencesName)?.count == 0
    #else
      false
    #endif
  }

  /// Whether the copy has `key` (always true where there is no corelibs).
  func has(_ key: String) -> Bool {
    #if os(Linux)
      value(forKey: key) != nil
    #else
      true
    #endif
  }

  /// Writes (or, for nil, removes) `key` in the domain by exact names (``CorelibsPreferences/set(_:forKey:domain:)``);
  /// false when that cannot be done (not Linux), and the caller writes through `UserDefaults`.
  func set(_ object: AnyObject?, forKey key: String) -> Bool {
    #if os(Linux)
      CorelibsPreferences.set(object, forKey: key, domain: preferencesName)
    #else
      false
    #endif
  }

  /// Writes (or, for nil, removes) `key` as `UserDefaults.set(_:forKey:)` does after checking the value
  /// (``CorelibsPreferences/setAppValue(_:forKey:application:)``), without its check's bridging of the value; false
  /// when that cannot be done (not Linux), and the caller writes through `UserDefaults`.
  func setAsUserDefaults(_ object: AnyObject?, forKey key: String) -> Bool {
    #if os(Linux)
      CorelibsPreferences.setAppValue(object, forKey: key, application: preferencesName)
    #else
      false
    #endif
  }

  /// The whole copy as CoreFoundation holds it, with plain `UserDefaults` writes of this process, each key as
  /// CoreFoundation holds it: `persistentDomain(forName:)` hands out a Swift dictionary, and bridging to one merges
  /// keys that differ only by Unicode normalization, keeping one.
  func dictionary(of defaults: UserDefaults) -> NSDictionary {
    #if os(Linux)
      CorelibsPreferences.domain(preferencesName) ?? NSDictionary()
    #elseif canImport(Darwin)
      ApplePreferences.persistentDomain(of: defaults, name: name)
    #else
      NSDictionary(dictionary: defaults.persistentDomain(forName: name) ?? [:])
    #endif
  }

  /// ``dictionary(of:)`` as property-list entries; throws when a value is not a property-list value.
  func entries(of defaults: UserDefaults) throws(SaveFailure) -> [PropertyListKey: PropertyListValue] {
    try SuiteFile.entries(dictionary(of: defaults))
  }
}
