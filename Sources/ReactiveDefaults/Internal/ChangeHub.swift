import Foundation
import Synchronization

/// Receives the changes of one key. Implemented by ``KeyObserver``; the hub knows nothing of value types.
protocol ChangeReceiver: AnyObject, Sendable {
  /// Called outside every hub lock, in no particular thread order: `version` says which change is newer.
  /// With `notify == false` the receiver only records the value as its baseline.
  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool)
}

/// The single change hub of one suite in this process: the registry of each key's observers and the fan-out of
/// changes to them. Every ``DefaultsStore`` and ``DefaultsProperty`` over the suite shares it, so a write through
/// any of them reaches every observer of that key, and only the observers of that key.
///
/// Writes go to storage one at a time through a ``WriteGate``, outside the hub's lock (storage may call back into
/// unknown code), and are recorded as numbered versions right after; observers are called after the write, outside
/// every lock, and drop versions older than one they saw. Saving and reloading are the storage's
/// ``SuitePersistence``'s.
final class ChangeHub: Sendable {
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
    /// Keyed by exact characters: a write of one spelling of a key tells only that spelling's observers.
    var keys: [PropertyListKey: KeyEntry] = [:]
    var receiverCount = 0

    /// Records `stored` as the key's newest value; returns whom to tell, or nil if nothing changed (or nobody
    /// observes the key).
    mutating func record(_ stored: PropertyListValue?, forKey name: String) -> Fanout? {
      let key = PropertyListKey(name)
      guard var entry = keys[key], !isSameSetting(entry.last, stored) else { return nil }
      version += 1
      entry.last = stored
      entry.version = version
      keys[key] = entry
      return Fanout(stored: stored, version: version, receivers: Array(entry.receivers.values))
    }

    /// What adding a receiver did.
    struct Added {
      /// The change to deliver first: the value changed behind the key's observers' backs.
      var fanout: Fanout?
      /// The version to hand the new receiver.
      var version: UInt64
      /// The hub's first receiver: start watching the suite.
      var firstOfHub: Bool
      /// The key's first receiver: storage starts reporting the key.
      var firstOfKey: Bool
    }

    /// Adds a receiver, after recording the key's current value.
    mutating func add(_ receiver: any ChangeReceiver, forKey name: String, current: PropertyListValue?) -> Added {
      let fanout = record(current, forKey: name)
      let key = PropertyListKey(name)
      let firstOfKey = keys[key] == nil
      if firstOfKey {
        version += 1
        keys[key] = KeyEntry(last: current, version: version)
      }
      keys[key]!.receivers[ObjectIdentifier(receiver)] = receiver
      receiverCount += 1
      return Added(fanout: fanout, version: keys[key]!.version, firstOfHub: receiverCount == 1, firstOfKey: firstOfKey)
    }

    /// Removes a receiver (and the key's entry with its last one); returns it, to be released after the lock,
    /// and whether it was the key's last and the hub's last.
    mutating func remove(_ receiver: any ChangeReceiver, forKey name: String) -> (
      removed: (any ChangeReceiver)?, lastOfHub: Bool, lastOfKey: Bool
    ) {
      let key = PropertyListKey(name)
      guard let removed = keys[key]?.receivers.removeValue(forKey: ObjectIdentifier(receiver)) else {
        return (nil, false, false)
      }
      let lastOfKey = keys[key]?.receivers.isEmpty == true
      if lastOfKey { keys[key] = nil }
      receiverCount -= 1
      return (removed, receiverCount == 0, lastOfKey)
    }
  }

  let storage: any DefaultsStorage
  /// The suite's name, when known.
  let suiteName: String?
  /// Whether the storage's suite is known (by name, or as the standard domain) or private (memory). A hub over a
  /// `UserDefaults` instance whose suite is unknown re-checks each key any other hub writes (``recheck(_:)``).
  let suiteIsKnown: Bool
  private let state = Locked(State())
  private let gate = WriteGate()
  private let editLock = EditLock()
  private let refreshScheduled = Atomic<Bool>(false)
  /// Key changes reported by storage that were not the hub's own writes (for tests).
  let keyReportCount = Atomic<Int>(0)
  /// Keys reported changed by storage and not yet re-read.
  private let reportedKeys = Locked<Set<PropertyListKey>>([])
  /// Refreshes scheduled by outside-change notifications so far (for tests: the hub's own writes schedule none).
  let externalRefreshCount = Atomic<Int>(0)
  private let issueListeners = Locked<[ObjectIdentifier: @Sendable (DefaultsError) -> Void]>([:])

  init(storage: any DefaultsStorage, suiteName: String?, suiteIsKnown: Bool) {
    self.storage = storage
    self.suiteName = suiteName
    self.suiteIsKnown = suiteIsKnown
    if !suiteIsKnown { HubRegistry.unknownSuiteHubs.add(1, ordering: .relaxed) }
    storage.observeExternalChanges { [weak self] in self?.externalChangeNotified() }
    storage.observeKeyChanges { [weak self] in self?.keyChangeReported($0) }
    storage.persistence?.attach(
      SuitePersistence.Hooks(
        refresh: { [weak self] in self?.refresh() },
        announce: { [weak self] in self?.announce($0) },
        excludingWrites: { [weak self] body in self.map { $0.gate.excludingWrites(body) } ?? body() },
        observerCount: { [weak self] in self?.observerCount ?? 0 }))
  }

  deinit {
    if !suiteIsKnown { HubRegistry.unknownSuiteHubs.subtract(1, ordering: .relaxed) }
    // No file work here: unsaved writes go to a background save.
    storage.persistence?.handOff()
  }

  var persistence: SuitePersistence? { storage.persistence }
  /// The suite's plist and lock file, when the library handles them.
  var file: SuiteFile? { persistence?.file }

  /// The stored value of a key in property-list form; nil when absent or not a property-list value.
  func stored(forKey key: String) -> PropertyListValue? {
    storage.value(forKey: key)
  }

  // MARK: Writing

  /// Writes to storage and notifies the key's observers if the stored value changed. A write made from inside
  /// a callback of a write in progress on this thread is done right after that one.
  func write(_ write: StorageWrite, forKey key: String) {
    guard case .proceed = gate.enter(write, forKey: key) else { return }
    let applied = applyHoldingGate([(key, write)])
    persistence?.perform(applied.saving)
    for fanout in applied.fanouts { fanout.deliver() }
    HubRegistry.didWrite(applied.written, through: self)
  }

  /// What writes done through the gate did.
  private struct Applied {
    var fanouts: [Fanout] = []
    var saving = SuitePersistence.WriteAction.none
    var written: [String] = []
  }

  /// Applies `writes`, then the writes that storage's callbacks queued meanwhile, holding the gate, which it opens
  /// at the end.
  private func applyHoldingGate(_ writes: [(key: String, write: StorageWrite)]) -> Applied {
    var applied = Applied()
    var remaining = writes[...]
    var next = remaining.popFirst()
    while let current = next {
      let stored = storage.apply(current.write, forKey: current.key)
      if let fanout = state.withLock({ $0.record(stored, forKey: current.key) }) { applied.fanouts.append(fanout) }
      if let action = persistence?.wrote(current.key, stored), action.isMoreUrgent(than: applied.saving) {
        applied.saving = action
      }
      applied.written.append(current.key)
      next = remaining.popFirst() ?? gate.next().map { (key: $0.key, write: $0.write) }
    }
    return applied
  }

  // MARK: Transactions

  /// The suite as error messages name it.
  var suiteDescription: String {
    if let suiteName { return suiteName }
    if storage.persistence != nil { return "the standard suite" }
    return storage.userDefaults == nil ? "an in-memory suite" : "a UserDefaults instance"
  }

  /// Runs `body` as one transaction: no other edit of the suite runs meanwhile (in this process; on Linux, in any
  /// process using the library, through the suite's lock), and the suite is first made the file as it is now.
  /// `body` reads through storage and returns the writes to apply; they are applied, and saved, before the lock is
  /// released. Observers are told after every lock, once per key that changed.
  ///
  /// - Throws: ``DefaultsError/reentrantEdit(suite:)`` from inside an edit of this suite on this thread (or from a
  ///   callback storage makes during a write); ``DefaultsError/saveFailed(path:reason:)`` when the suite cannot be
  ///   locked, reloaded or saved (then nothing is written); `body`'s error, and then nothing is written.
  func edit<Outcome>(_ body: () throws -> (outcome: Outcome, writes: [(key: String, write: StorageWrite)])) throws
    -> Outcome
  {
    guard !gate.isHeldByCurrentThread, editLock.lock() else {
      throw DefaultsError.reentrantEdit(suite: suiteDescription)
    }
    var findings = SuitePersistence.Findings()
    var applied = Applied()
    // Linux: the writes go straight into the file, then into memory and the observers' record, with no write of
    // ours in between; a failure leaves all three as they were.
    func commit(_ findings: inout SuitePersistence.Findings, to persistence: SuitePersistence) throws -> Outcome {
      let (outcome, writes) = try body()
      guard !writes.isEmpty else { return outcome }
      let changes = writes.map { (key: PropertyListKey($0.key), value: $0.write.storedValue) }
      try persistence.commit(changes, findings: &findings) {
        applied.fanouts = state.withLock { state in changes.compactMap { state.record($0.value, forKey: $0.key.string) }
        }
        applied.written = changes.map(\.key.string)
      }
      return outcome
    }
    // Memory and Apple platforms: nothing to save; the writes go to storage one after another, through the gate.
    func apply() throws -> Outcome {
      let (outcome, writes) = try body()
      guard !writes.isEmpty else { return outcome }
      gate.enterForSeveralWrites()
      applied = applyHoldingGate(writes)
      return outcome
    }
    let outcome: Outcome
    do {
      defer { editLock.unlock() }
      if let persistence {
        outcome = try persistence.exclusively(&findings) { try commit(&$0, to: persistence) }
      } else {
        outcome = try apply()
      }
    } catch {
      persistence?.act(on: findings)
      throw error
    }
    for fanout in applied.fanouts { fanout.deliver() }
    // Another process's changes, seen by the reload: the keys the edit wrote are recorded already, so each observer
    // hears of a key once, with its final value.
    persistence?.act(on: findings)
    HubRegistry.didWrite(applied.written, through: self)
    return outcome
  }

  /// Writes many keys at once, atomically: on Linux straight into the suite's file (one save, whatever the number
  /// of keys), elsewhere as one edit.
  func merge(_ entries: [PropertyListKey: PropertyListValue]) throws(DefaultsError) {
    if let persistence { return try persistence.merge(entries) }
    do {
      try edit { ((), entries.map { (key: $0.key.string, write: StorageWrite.set($0.value)) }) }
    } catch let error as DefaultsError {
      throw error
    } catch {
      throw .saveFailed(path: suiteDescription, reason: "\(error)")
    }
  }

  /// Saves now (nothing to do for storage the library does not save).
  func save() throws(DefaultsError) {
    try persistence?.save()
  }

  /// ``save()``, with a failure reported to the stores' issue handlers.
  func saveReportingFailure() {
    persistence?.saveReportingFailure()
  }

  /// Reloads the suite from disk where the library handles the file and it changed since this process last saved or
  /// loaded it, then re-reads the observed keys and tells the observers of those that changed.
  func reload() {
    if let persistence { persistence.reload() } else { refresh() }
  }

  // MARK: Observing

  /// Re-reads every observed key and notifies the observers of those whose value differs from the one they
  /// last saw. Keys nobody observes are not read.
  func refresh() {
    let fanouts = state.withLock { state -> [Fanout] in
      state.keys.keys.compactMap { key in state.record(storage.value(forKey: key.string), forKey: key.string) }
    }
    for fanout in fanouts { fanout.deliver() }
  }

  /// Re-reads the given keys where observed (another hub wrote them, perhaps to this hub's suite).
  func recheck(_ keys: [String]) {
    let fanouts = state.withLock { state -> [Fanout] in
      keys.compactMap { key in
        state.keys[PropertyListKey(key)] == nil ? nil : state.record(storage.value(forKey: key), forKey: key)
      }
    }
    for fanout in fanouts { fanout.deliver() }
  }

  /// Registers a receiver for a key and hands it the current value (as a change when `initial`, else as
  /// its baseline). ``remove(_:forKey:)`` takes it out again.
  func add(_ receiver: any ChangeReceiver, forKey key: String, initial: Bool) {
    let (current, added) = state.withLock { state in
      let current = storage.value(forKey: key)
      return (current, state.add(receiver, forKey: key, current: current))
    }
    if added.firstOfHub { persistence?.updateWatching { observerCount > 0 } }
    if added.firstOfKey { storage.keyObservation(key, changedBy: 1) }
    added.fanout?.deliver()
    receiver.receive(current, version: added.version, notify: initial)
  }

  /// Removes a receiver; the key's entry goes with its last receiver.
  func remove(_ receiver: any ChangeReceiver, forKey key: String) {
    let (removed, lastOfHub, lastOfKey) = state.withLock { $0.remove(receiver, forKey: key) }
    // Released after the lock, in case it is the last reference to something heavier.
    withExtendedLifetime(removed) {}
    if lastOfKey { storage.keyObservation(key, changedBy: -1) }
    if lastOfHub { persistence?.updateWatching { observerCount > 0 } }
  }

  /// The number of changes recorded so far (for tests: a write that changes nothing does not count).
  var changeCount: UInt64 {
    state.withLock { $0.version }
  }

  /// The number of live receivers across all keys (for tests and diagnostics).
  var observerCount: Int {
    state.withLock { $0.receiverCount }
  }

  private func externalChangeNotified() {
    // Our own writes notify their observers themselves; Apple posts the notification synchronously inside them.
    guard !gate.isHeldByCurrentThread else { return }
    // Coalesce a burst of notifications into one refresh, off the posting thread (which may hold locks).
    guard refreshScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    externalRefreshCount.add(1, ordering: .relaxed)
    DispatchQueue.global().async { [weak self] in
      guard let self else { return }
      self.refreshScheduled.store(false, ordering: .releasing)
      self.refresh()
    }
  }

  /// A change of one key reported by storage (Apple: key-value observing). Inside a write of the hub's own it is
  /// that write, already delivered; any other (another process's write) is re-read off the reporting thread,
  /// which is inside Apple's machinery, coalescing reports that arrive meanwhile.
  private func keyChangeReported(_ key: String) {
    guard !gate.isHeldByCurrentThread else { return }
    keyReportCount.add(1, ordering: .relaxed)
    let first = reportedKeys.withLock { reported in
      defer { reported.insert(PropertyListKey(key)) }
      return reported.isEmpty
    }
    guard first else { return }
    DispatchQueue.global().async { [weak self] in
      guard let self else { return }
      let keys = self.reportedKeys.withLock { reported in
        defer { reported = [] }
        return reported.map(\.string)
      }
      self.recheck(keys)
    }
  }

  // MARK: Issues

  /// Registers a store's issue handler for file problems and failed saves.
  func addIssueListener(_ id: ObjectIdentifier, _ listener: @escaping @Sendable (DefaultsError) -> Void) {
    issueListeners.withLock { $0[id] = listener }
  }

  func removeIssueListener(_ id: ObjectIdentifier) {
    _ = issueListeners.withLock { $0.removeValue(forKey: id) }
  }

  /// Tells every store's issue handler about a problem, outside every lock.
  func announce(_ issue: DefaultsError) {
    for listener in issueListeners.withLock({ Array($0.values) }) { listener(issue) }
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundFileIssues: [DefaultsError] {
    persistence?.foundIssues ?? []
  }
}

extension SuitePersistence.WriteAction {
  fileprivate func isMoreUrgent(than other: Self) -> Bool {
    switch (self, other) {
    case (.saveNow, .saveNow), (.none, _), (.scheduleSave, .scheduleSave), (.scheduleSave, .saveNow): false
    default: true
    }
  }
}
