import Foundation
import Synchronization

/// The single change hub of one suite (or file store) in this process: the registry of each key's observers
/// (``ObservedKeys``, behind the hub's lock) and the fan-out of changes to them, shared by every store and property
/// over it. Writes go to storage one at a time through a ``WriteGate``, outside the hub's lock (storage may call back
/// into unknown code), recorded as numbered versions right after; observers run after the write, outside every lock,
/// and drop versions older than one they saw. Changes the hub did not make (a notification, a key reported changed, a
/// reload) are re-read off the reporting thread (``Coalescer``). Transactions: ChangeHub+Transactions.swift; saving and
/// reloading the file: its ``SuitePersistence``, which calls back through the hooks attached here.
final class ChangeHub: Sendable {
  let storage: any DefaultsStorage
  /// The suite's name, when known.
  let suiteName: String?
  /// Whether the storage's suite is known (by name, or as the standard domain) or private (memory). A hub over a
  /// `UserDefaults` instance whose suite is unknown re-checks each key any other hub writes (``recheck(_:)``).
  let suiteIsKnown: Bool
  let state = Locked(ObservedKeys())
  let gate = WriteGate()
  let editLock = EditLock()
  /// Refreshes asked for by outside-change notifications, and keys reported changed by storage, not yet re-read.
  private let refreshes = Coalescer<Never>()
  private let reportedKeys = Coalescer<PropertyListKey>()
  /// Key changes reported by storage that were not the hub's own writes (for tests).
  let keyReportCount = Atomic<Int>(0)
  /// Refreshes scheduled by outside-change notifications so far (for tests: the hub's own writes schedule none).
  let externalRefreshCount = Atomic<Int>(0)
  let issueListeners = IssueListeners()
  /// The values of keys read lately that are decoded at each read, with what they were decoded from.
  let decodedValues = DecodedValues()
  /// The suite's size against its platform's limit (Apple platforms but macOS), else nil.
  let sizeBudget: DomainSizeBudget?

  init(storage: any DefaultsStorage, suiteName: String?, suiteIsKnown: Bool) {
    self.storage = storage
    persistence = storage.persistence
    self.suiteName = suiteName
    self.suiteIsKnown = suiteIsKnown
    sizeBudget = storage.sizeLimit.map(DomainSizeBudget.init)
    if !suiteIsKnown { HubRegistry.unknownSuiteHubs.add(1, ordering: .relaxed) }
    storage.observeExternalChanges { [weak self] in self?.externalChangeNotified() }
    storage.observeKeyChanges { [weak self] in self?.keyChangeReported($0) }
    persistence?.attach(
      SuitePersistence.Hooks(
        refresh: { [weak self] in self?.refresh() },
        announce: { [weak self] in self?.announce($0) },
        excludingWrites: { [weak self] body in self.map { $0.gate.excludingWrites(body) } ?? body() },
        observerCount: { [weak self] in self?.observerCount ?? 0 }),
      for: ObjectIdentifier(self))
  }

  deinit {
    if !suiteIsKnown { HubRegistry.unknownSuiteHubs.subtract(1, ordering: .relaxed) }
    // No file work here: unsaved writes go to a background save.
    persistence?.detach(ObjectIdentifier(self))
    persistence?.handOff()
  }

  /// The storage's persistence (a stored `let`: every read asks for it, and a `let` costs no reference counting).
  let persistence: SuitePersistence?
  /// The suite's plist and lock file, when the library handles them.
  var file: SuiteFile? { persistence?.file }

  /// The stored object of a key as storage hands it out, once reads followed the file (called outside every lock).
  func object(forKey key: String) -> Any? {
    persistence?.followFile()
    return storage.object(forKey: key)
  }

  /// The stored value of a key in property-list form; nil when absent or not a property-list value.
  func stored(forKey key: String) -> PropertyListValue? {
    storage.value(forKey: key)
  }

  // MARK: Writing

  /// Writes to storage and notifies the key's observers if the stored value changed. A write made from inside
  /// a callback of a write in progress on this thread is done right after that one. Returns why the write was
  /// refused (``DefaultsError/domainTooLarge(key:size:limit:)``): a refused write that waited is announced instead.
  @discardableResult
  func write(_ write: StorageWrite, forKey key: String) -> DefaultsError? {
    guard case .proceed = gate.enter(write, forKey: key) else { return nil }
    let applied = applyHoldingGate([(key, write)])
    finish(applied)
    return applied.firstRefused
  }

  /// What writes done through the gate did (``applyHoldingGate(_:allOrNothing:)``).
  struct Applied {
    var fanouts: [Fanout] = []
    var saving = SuitePersistence.WriteAction.none
    var written: [String] = []
    /// Why the first of the writes was refused (``DomainSizeBudget``: then, when all or nothing, none was
    /// applied), and the other refusals and size warnings.
    var firstRefused: DefaultsError?
    var issues: [DefaultsError] = []
  }

  /// Applies `writes`, then the writes that storage's callbacks queued meanwhile, holding the gate, which it opens
  /// at the end. `allOrNothing`: the size budget takes or refuses `writes` as one.
  func applyHoldingGate(_ writes: [(key: String, write: StorageWrite)], allOrNothing: Bool = false) -> Applied {
    var applied = Applied()
    let measure = { self.storage.sizingSnapshot() }
    if allOrNothing, let sizeBudget {
      applied.firstRefused = sizeBudget.refusal(of: writes.map { ($0.key, $0.write.storedValue) }, measuring: measure)
    }
    var remaining = applied.firstRefused == nil ? writes[...] : []
    // (Writes queued by storage's callbacks meanwhile are each admitted or refused, as any write is.)
    var batch = remaining.count
    var next = remaining.popFirst() ?? gate.next().map { (key: $0.key, write: $0.write) }
    while let current = next {
      batch -= 1
      let refusing = !allOrNothing || batch < 0
      let (refusal, warning) =
        sizeBudget?.admit(current.write.storedValue, forKey: current.key, refusing: refusing, measuring: measure)
        ?? (nil, nil)
      if let refusal, applied.written.isEmpty && applied.firstRefused == nil {
        applied.firstRefused = refusal
      } else if let issue = refusal ?? warning {
        applied.issues.append(issue)
      }
      if refusal == nil {
        let stored = storage.apply(current.write, forKey: current.key)
        if let fanout = state.withLock({ $0.record(stored, forKey: current.key) }) { applied.fanouts.append(fanout) }
        if let action = persistence?.wrote(current.key, stored), action.isMoreUrgent(than: applied.saving) {
          applied.saving = action
        }
        applied.written.append(current.key)
      }
      next = remaining.popFirst() ?? gate.next().map { (key: $0.key, write: $0.write) }
    }
    return applied
  }

  /// Saves now; where the library does not save the file itself (Apple platforms), has the platform's preferences
  /// store write what this process wrote (``DefaultsStorage/synchronizeWithPlatform()``).
  func save() throws(DefaultsError) {
    if let persistence { return try persistence.save() }
    guard storage.synchronizeWithPlatform() else {
      throw .saveFailed(
        path: suiteDescription,
        reason: "the preferences daemon did not take the writes (CFPreferencesAppSynchronize returned false)")
    }
  }

  /// ``save()``, with a failure reported to the stores' issue handlers.
  func saveReportingFailure() {
    if let persistence { return persistence.saveReportingFailure() }
    do throws(DefaultsError) { try save() } catch { announce(error) }
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
    sizeBudget?.invalidate()
    let fanouts = state.withLock { state -> [Fanout] in
      state.keys.keys.compactMap { key in state.record(storage.value(forKey: key.string), forKey: key.string) }
    }
    for fanout in fanouts { fanout.deliver() }
  }

  /// Re-reads the given keys where observed (another hub wrote them, perhaps to this hub's suite).
  func recheck(_ keys: [String]) {
    sizeBudget?.update(keys) { storage.sizingValue(forKey: $0) }
    let fanouts = state.withLock { state -> [Fanout] in
      keys.compactMap { key in
        state.keys[PropertyListKey(key)] == nil ? nil : state.record(storage.value(forKey: key), forKey: key)
      }
    }
    for fanout in fanouts { fanout.deliver() }
  }

  /// Registers a receiver for a key and hands it the current value (as a change when `initial`, else as its baseline).
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
  var changeCount: UInt64 { state.withLock { $0.version } }

  /// The number of live receivers across all keys (for tests and diagnostics).
  var observerCount: Int { state.withLock { $0.receiverCount } }

  private func externalChangeNotified() {
    // Our own writes notify their observers themselves; Apple posts the notification synchronously inside them.
    guard !gate.isWritingOnCurrentThread else { return }
    // A burst of notifications is one refresh, off the posting thread (which may hold locks).
    let scheduled = refreshes.request([]) { [weak self] _ in self?.refresh() }
    if scheduled { externalRefreshCount.add(1, ordering: .relaxed) }
  }

  /// A change of one key reported by storage (Apple: key-value observing). Inside a write of the hub's own it is that
  /// write, already delivered; any other is re-read off the reporting thread (inside Apple's machinery), with the
  /// reports that arrive meanwhile.
  private func keyChangeReported(_ key: String) {
    guard !gate.isWritingOnCurrentThread else { return }
    keyReportCount.add(1, ordering: .relaxed)
    reportedKeys.request([PropertyListKey(key)]) { [weak self] keys in self?.recheck(keys.map(\.string)) }
  }

  // MARK: Issues

  /// Tells every store's issue handler about a problem, outside every lock.
  func announce(_ issue: DefaultsError) {
    issueListeners.announce(issue)
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundFileIssues: [DefaultsError] {
    persistence?.foundIssues ?? []
  }
}
