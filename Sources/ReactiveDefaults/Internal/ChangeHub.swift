import Foundation
import Synchronization

/// Receives the changes of one key. Implemented by ``KeyObserver``; the hub knows nothing of value types.
protocol ChangeReceiver: AnyObject, Sendable {
  /// Called outside every hub lock, in no particular thread order: `version` says which change is newer.
  /// With `notify == false` the receiver only records the value as its baseline.
  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool)
}

/// The single change hub of one suite in this process: every ``DefaultsStore`` and ``DefaultsProperty``
/// over the suite shares it, so a write through any of them reaches every observer of that key, and only
/// the observers of that key.
///
/// Writes to storage happen under the hub's lock, so the order of versions is the order of values in
/// storage; observers are called after the lock is released, and drop versions older than one they saw.
final class ChangeHub: Sendable {
  /// What a write does to storage.
  enum Write {
    case set(PropertyListValue)
    case remove
    #if canImport(Darwin)
      /// Apple's own `set(_: URL?, forKey:)`, which the design asks for on Apple platforms.
      case url(URL)
    #endif
  }

  /// The observers to call for one change, collected under the lock and called after it.
  struct Fanout {
    var stored: PropertyListValue?
    var version: UInt64
    var receivers: [any ChangeReceiver]

    func deliver() {
      for receiver in receivers { receiver.receive(stored, version: version, notify: true) }
    }
  }

  private struct KeyEntry {
    var last: PropertyListValue?
    var version: UInt64
    var receivers: [ObjectIdentifier: any ChangeReceiver] = [:]
  }

  private struct State {
    var version: UInt64 = 0
    var keys: [String: KeyEntry] = [:]
    /// Writes through this hub so far (a reload drops keys only when none happened while it read the file).
    var writeCount: UInt64 = 0
    /// Keys written since the last save.
    var unsavedKeys: Set<String> = []

    /// Records `stored` as the key's newest value; returns whom to tell, or nil if nothing changed.
    mutating func record(_ stored: PropertyListValue?, forKey key: String) -> Fanout? {
      guard var entry = keys[key], !isSameSetting(entry.last, stored) else { return nil }
      version += 1
      entry.last = stored
      entry.version = version
      keys[key] = entry
      return Fanout(stored: stored, version: version, receivers: Array(entry.receivers.values))
    }
  }

  /// `UserDefaults` is documented as thread-safe but not marked `Sendable` in corelibs Foundation.
  nonisolated(unsafe) let defaults: UserDefaults
  /// The suite's name when the hub was made for a name (its plist lives under that name).
  let suiteName: String?
  /// The suite's plist and lock file and what this process knows of them, when known (Linux: a named suite, or
  /// `UserDefaults.standard`).
  let record: SuiteFileRecord?
  /// The suite's plist and lock file, when known.
  var file: SuiteFile? { record?.file }
  /// How long after a write its coalesced save runs: well inside the promised 100 ms.
  static let saveDelay: DispatchTimeInterval = .milliseconds(50)
  /// Distinct keys written since the last save that trigger a save at once: corelibs' cost of adding a key grows
  /// with the number of unsaved keys, and a save costs O(keys in the file). Saving every √(file size in bytes)
  /// keys (at least 256) balances the two: measured 8,000 new keys in 0.55 s instead of 3.0 s without saves.
  static let minimumUnsavedKeysBeforeSave = 256
  private var maximumUnsavedKeys: Int {
    max(
      Self.minimumUnsavedKeysBeforeSave, Int(Double(record?.savedFileSize.load(ordering: .relaxed) ?? 0).squareRoot()))
  }
  private let saveScheduled = Atomic<Bool>(false)
  private let reloadScheduled = Atomic<Bool>(false)
  #if os(Linux)
    private let watch = Locked<FolderWatcher.Subscription?>(nil)
  #endif

  private let state = Locked(State())
  /// The thread inside `write` right now (0: none), so that Apple's synchronous `didChangeNotification` for our
  /// own write does not schedule a refresh.
  private let writingThread = Atomic<UInt>(0)
  private let refreshScheduled = Atomic<Bool>(false)
  private let notificationToken = Locked<NotificationToken?>(nil)
  private let issueListeners = Locked<[ObjectIdentifier: @Sendable (DefaultsError) -> Void]>([:])

  init(defaults: UserDefaults, suiteName: String?) {
    self.defaults = defaults
    self.suiteName = suiteName
    #if os(Linux)
      if let suiteName {
        record = SuiteFileRecord(file: SuiteFile(suiteName: suiteName), isStandardDomain: false)
      } else if defaults === UserDefaults.standard {
        record = SuiteFileRecord(file: SuiteFile(suiteName: SuiteFile.standardDomainName), isStandardDomain: true)
      } else {
        record = nil
      }
    #else
      // Apple's preferences daemon owns the files: no path of ours, no lock, no watching.
      record = nil
    #endif
    // Before corelibs reads the file: complete a save a crash interrupted, and check the file (an unreadable one
    // is kept aside before any save could replace it; one corelibs could crash or hang on is moved away).
    if let record, record.file.stamp() != nil || FileManager.default.fileExists(atPath: record.file.journalPath) {
      _ = record.open()  // a problem is kept in the record's found issues, replayed to each issue handler
    }
    // corelibs answers stale reads on a cold suite used from several threads at once: warm it up here.
    _ = defaults.object(forKey: "ReactiveDefaults.warmUp")
    let token = NotificationCenter.default.addObserver(
      forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
    ) { [weak self] _ in
      self?.externalChangeNotified()
    }
    notificationToken.withLock { $0 = NotificationToken(observer: token) }
  }

  deinit {
    if state.withLock({ !$0.unsavedKeys.isEmpty }) { saveReportingFailure() }
    if let token = notificationToken.withLock({ $0 }) {
      NotificationCenter.default.removeObserver(token.observer)
    }
  }

  /// The stored value of a key in property-list form; nil when absent or not a property-list value.
  func stored(forKey key: String) -> PropertyListValue? {
    defaults.object(forKey: key).flatMap(PropertyListValue.init(foundationObject:))
  }

  /// Writes to storage and notifies the key's observers if the stored value changed.
  func write(_ write: Write, forKey key: String) {
    let (fanout, firstUnsaved, mustSave) = state.withLock { state -> (Fanout?, Bool, Bool) in
      writingThread.store(currentThreadID(), ordering: .relaxed)
      defer { writingThread.store(0, ordering: .relaxed) }
      let newValue: PropertyListValue?
      switch write {
      case .set(let value):
        defaults.set(value.foundationObject, forKey: key)
        newValue = value
      case .remove:
        defaults.removeObject(forKey: key)
        newValue = nil
      #if canImport(Darwin)
        case .url(let url):
          defaults.set(url, forKey: key)
          newValue = stored(forKey: key)
      #endif
      }
      state.writeCount += 1
      let firstUnsaved = state.unsavedKeys.isEmpty
      state.unsavedKeys.insert(key)
      return (state.record(newValue, forKey: key), firstUnsaved, state.unsavedKeys.count >= maximumUnsavedKeys)
    }
    if mustSave {
      saveReportingFailure()
    } else if firstUnsaved {
      scheduleSave()
    }
    fanout?.deliver()
  }

  // MARK: Saving and reloading

  /// Saves now: pending writes reach disk, merged with what other processes saved. On failure the file is as it
  /// was and the writes stay pending for the next save.
  func save() throws(DefaultsError) {
    let keys = takeUnsavedKeys()
    guard let record else {
      // A `UserDefaults` whose suite is unknown: only corelibs can save it.
      guard defaults.synchronize() else {
        restoreUnsavedKeys(keys)
        throw .saveFailed(path: "(unknown suite)", reason: "UserDefaults.synchronize() failed")
      }
      return
    }
    do {
      let outcome = try record.save(defaults, keys: keys)
      announce(outcome.issue)
      // The save merged another process's changes into memory: tell the observers.
      if outcome.changedElsewhere { refresh() }
    } catch {
      restoreUnsavedKeys(keys)
      throw .saveFailed(path: record.file.path, reason: error.reason)
    }
  }

  /// ``save()``, with a failure reported to the stores' issue handlers (the background save, the save at exit).
  func saveReportingFailure() {
    do { try save() } catch { announce(error) }
  }

  /// Reloads the suite from disk and notifies the observers of keys that changed.
  func reload() {
    guard let record else {
      saveReportingFailure()
      return refresh()
    }
    // The file is as this process last saved or read it (the event was our own save): nothing to reload. Without
    // this, every save of a large domain paid for a reload and a refresh of every observed key.
    if record.isSynced { return }
    // The folder is gone (removed while watched): nothing to lock or read; corelibs' copy is dropped below.
    guard FileManager.default.fileExists(atPath: record.file.folder) else {
      let hasUnsavedWrites = state.withLock { !$0.unsavedKeys.isEmpty }
      // Writes of ours wait for the folder to come back (the next save creates it); else drop corelibs' copy.
      if hasUnsavedWrites || !record.synchronizeDomain() { scheduleSave() }
      return refresh()
    }
    do {
      let (issue, reloaded) = try record.reload {
        // Under the hub's lock no write of ours can slip in: with nothing unsaved, corelibs only drops its cache.
        state.withLock { state in
          // corelibs failing to drop its copy means it had something to write after all: save instead.
          state.unsavedKeys.isEmpty && record.synchronizeDomain()
        }
      }
      announce(issue)
      // Writes of ours are pending: a save merges the file with them, which is a reload too.
      if !reloaded { saveReportingFailure() }
    } catch {
      // Only the lock can fail here: the file stays as it is, to be reloaded at its next change.
      announce(.unreadableFile(path: record.file.path, reason: "cannot be reloaded: \(error.reason)", backup: nil))
    }
    refresh()
  }

  /// Takes the keys written since the last save, for a save that is about to start: the coalesced save and the
  /// save at exit are no longer needed for them.
  private func takeUnsavedKeys() -> Set<String> {
    let keys = state.withLock { state in
      defer { state.unsavedKeys.removeAll() }
      return state.unsavedKeys
    }
    SaveOnExit.remove(self)
    return keys
  }

  /// Puts back the keys of a save that failed: the next save tries them again.
  private func restoreUnsavedKeys(_ keys: Set<String>) {
    guard !keys.isEmpty else { return }
    state.withLock { $0.unsavedKeys.formUnion(keys) }
    SaveOnExit.add(self)
  }

  /// Registers a store's issue handler for file problems and failed saves.
  func addIssueListener(_ id: ObjectIdentifier, _ listener: @escaping @Sendable (DefaultsError) -> Void) {
    issueListeners.withLock { $0[id] = listener }
  }

  func removeIssueListener(_ id: ObjectIdentifier) {
    _ = issueListeners.withLock { $0.removeValue(forKey: id) }
  }

  /// Tells every store's issue handler about a problem, outside every lock.
  func announce(_ issue: DefaultsError?) {
    guard let issue else { return }
    for listener in issueListeners.withLock({ Array($0.values) }) { listener(issue) }
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundFileIssues: [DefaultsError] {
    record?.foundIssues ?? []
  }

  /// Schedules the coalesced save for the first unsaved write, and the save at exit.
  private func scheduleSave() {
    SaveOnExit.add(self)
    guard saveScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.saveDelay) { [weak self] in
      guard let self else { return }
      self.saveScheduled.store(false, ordering: .releasing)
      // A flush (or a reload) since the write already saved it: nothing to do, no lock to take.
      guard self.state.withLock({ !$0.unsavedKeys.isEmpty }) else { return }
      self.saveReportingFailure()
    }
  }

  /// Schedules one reload for a burst of file events.
  private func fileChanged() {
    guard reloadScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { [weak self] in
      guard let self else { return }
      self.reloadScheduled.store(false, ordering: .releasing)
      self.reload()
    }
  }

  /// Watches the suite's file while the hub has observers (Linux: Apple platforms have their own notifications).
  private func updateWatching() {
    #if os(Linux)
      guard let file else { return }
      let ended = watch.withLock { subscription -> FolderWatcher.Subscription? in
        let wanted = observerCount > 0
        if wanted && subscription == nil {
          subscription = FolderWatcher.subscribe(folder: file.folder, fileName: file.fileName) { [weak self] in
            self?.fileChanged()
          }
        } else if !wanted, let current = subscription {
          subscription = nil
          return current
        }
        return nil
      }
      ended?.cancel()
    #endif
  }

  /// Re-reads every observed key and notifies the observers of those whose value differs from the one they
  /// last saw. Keys nobody observes are not read.
  func refresh() {
    let fanouts = state.withLock { state -> [Fanout] in
      var fanouts: [Fanout] = []
      for key in state.keys.keys {
        if let fanout = state.record(stored(forKey: key), forKey: key) { fanouts.append(fanout) }
      }
      return fanouts
    }
    for fanout in fanouts { fanout.deliver() }
  }

  /// Registers a receiver for a key and hands it the current value (as a change when `initial`, else as
  /// its baseline). ``remove(_:forKey:)`` takes it out again.
  func add(_ receiver: any ChangeReceiver, forKey key: String, initial: Bool) {
    let (current, version, fanout) = state.withLock { state -> (PropertyListValue?, UInt64, Fanout?) in
      let current = stored(forKey: key)
      // A value that changed behind our back since the key's observers last heard is a change for them too.
      let fanout = state.record(current, forKey: key)
      if state.keys[key] == nil {
        state.version += 1
        state.keys[key] = KeyEntry(last: current, version: state.version)
      }
      state.keys[key]!.receivers[ObjectIdentifier(receiver)] = receiver
      return (current, state.keys[key]!.version, fanout)
    }
    updateWatching()
    fanout?.deliver()
    receiver.receive(current, version: version, notify: initial)
  }

  /// Removes a receiver; the key's entry goes with its last receiver.
  func remove(_ receiver: any ChangeReceiver, forKey key: String) {
    // The hub's reference is released after the lock, in case it is the last one to something heavier.
    let removed = state.withLock { state -> (any ChangeReceiver)? in
      let removed = state.keys[key]?.receivers.removeValue(forKey: ObjectIdentifier(receiver))
      if state.keys[key]?.receivers.isEmpty == true { state.keys[key] = nil }
      return removed
    }
    _ = removed
    updateWatching()
  }

  /// The number of changes recorded so far (for tests: a write that changes nothing does not count).
  var changeCount: UInt64 {
    state.withLock { $0.version }
  }

  /// The number of live receivers across all keys (for tests and diagnostics).
  var observerCount: Int {
    state.withLock { $0.keys.values.reduce(0) { $0 + $1.receivers.count } }
  }

  private func externalChangeNotified() {
    // Our own writes already notified their observers; Apple posts the notification synchronously inside them.
    guard writingThread.load(ordering: .relaxed) != currentThreadID() else { return }
    // Coalesce a burst of notifications into one refresh, off the posting thread (which may hold locks).
    guard refreshScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    DispatchQueue.global().async { [weak self] in
      guard let self else { return }
      self.refreshScheduled.store(false, ordering: .releasing)
      self.refresh()
    }
  }
}

/// The token `NotificationCenter` returns: an immutable handle, only ever passed back to `removeObserver`.
private struct NotificationToken: @unchecked Sendable {
  let observer: any NSObjectProtocol
}

/// Saves, at normal process exit, the hubs whose coalesced save has not run yet: `set` then `exit(0)` loses
/// nothing.
enum SaveOnExit {
  private static let pending = Locked<[ObjectIdentifier: WeakHub]>([:])
  private static let installed: Bool = {
    atexit { SaveOnExit.saveAll() }
    return true
  }()

  private struct WeakHub {
    weak var hub: ChangeHub?
  }

  static func add(_ hub: ChangeHub) {
    _ = installed
    pending.withLock { $0[ObjectIdentifier(hub)] = WeakHub(hub: hub) }
  }

  static func remove(_ hub: ChangeHub) {
    _ = pending.withLock { $0.removeValue(forKey: ObjectIdentifier(hub)) }
  }

  private static func saveAll() {
    let hubs = pending.withLock { pending in
      defer { pending = [:] }
      return pending.values.compactMap(\.hub)
    }
    for hub in hubs { hub.saveReportingFailure() }
  }
}
