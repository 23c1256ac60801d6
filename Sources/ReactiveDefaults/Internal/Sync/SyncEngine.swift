import Dispatch
import Foundation

/// The work of one ``DefaultsSync``: local writes of the synced keys are stamped and pushed, remote changes pulled,
/// all of it in runs on a serial queue of its own (never the cooperative pool: an edit may wait for the suite's lock).
/// A run decides inside one `edit` of the store (``SyncState``), then pushes outside it.
final class SyncEngine: Sendable {
  let store: DefaultsStore
  let remote: any DefaultsRemote
  /// The wall clock in milliseconds since 1970 (tests skew it).
  let now: @Sendable () -> Int64
  private let queue = DispatchQueue(label: "ReactiveDefaults.sync")

  private struct Work: Sendable {
    var keys: [PropertyListKey] = []
    /// Keys whose store value changed, to look at without reading the remote.
    var changed: Set<PropertyListKey> = []
    /// Read the remote (nil: not needed; empty: every key).
    var pull: Set<PropertyListKey>?
    var accountChanged = false
    var scheduled = false
    var ended = false
    var device: String?
    var status = DefaultsSync.Status.idle
    var statusObservers: [UInt64: @Sendable (DefaultsSync.Status) -> Void] = [:]
    var nextObserver: UInt64 = 0
    var receivers: [(PropertyListKey, SyncKeyReceiver)] = []
    var remoteToken: DefaultsObservation?
    var idleWaiters: [@Sendable () -> Void] = []
    /// Milliseconds before every key is looked at again after a push discarded before the first download.
    var initialSyncRetry = SyncEngine.firstInitialSyncRetry
    /// The refused entries reported so far, by device and key: each is reported once, while the status shows a
    /// refusal at every run that meets one.
    var reportedRefusals: Set<[String]> = []
    /// Per key, whether a stored value decodes as the key's type (keys synced by name alone have none).
    var decoders: [PropertyListKey: @Sendable (PropertyListValue) -> Bool] = [:]
  }

  /// Tests: called inside a run's edit right after it looked at the store (a write there races the pulled values).
  static let editLooked = Locked<(@Sendable (DefaultsStore) -> Void)?>(nil)

  static let firstInitialSyncRetry = 250
  static let longestInitialSyncRetry = 60_000

  private let work = Locked(Work())

  /// How long local writes wait for more before their run (remote changes do not wait).
  let coalescing: Duration

  init(
    store: DefaultsStore, remote: any DefaultsRemote, now: @escaping @Sendable () -> Int64 = SyncClock.now,
    coalescing: Duration = .milliseconds(50)
  ) {
    self.store = store
    self.remote = remote
    self.now = now
    self.coalescing = coalescing
  }

  // MARK: Starting and stopping

  /// Adds keys: their current values are adopted (unstamped: never pushed), then they are looked at with the remote.
  /// `decoders` tells, per name, whether a stored value decodes as the key's type: a pulled value that does not is
  /// refused.
  func add(_ names: [String], decoders: [String: @Sendable (PropertyListValue) -> Bool] = [:]) {
    let added = work.withLock { work -> [PropertyListKey] in
      guard !work.ended else { return [] }
      var new: [PropertyListKey] = []
      for name in names {
        let key = PropertyListKey(name)
        if !work.keys.contains(key) && !new.contains(key) { new.append(key) }
      }
      work.keys += new
      for (name, decodes) in decoders { work.decoders[PropertyListKey(name)] = decodes }
      return new
    }
    guard !added.isEmpty else { return }
    // Adopted before `sync` returns: a write made right after it is a write of this device, stamped and pushed.
    let device = adopt(added)
    let start = work.withLock { work -> Bool in
      defer { work.device = work.device ?? device }
      return work.device == nil
    }
    for key in added {
      let receiver = SyncKeyReceiver { [weak self] _ in self?.changed(key) }
      work.withLock { $0.receivers.append((key, receiver)) }
      store.hub.add(receiver, forKey: key.string, initial: false)
    }
    if start {
      let token = remote.start(device: device) { [weak self] change in self?.remoteChanged(change) }
      work.withLock { $0.remoteToken = token }
      synchronizeRemote()
    }
    schedule(pull: Set(added))
  }

  /// Records the keys' current values as this device's own (unstamped), in one edit that also names the device the
  /// first time; returns the device's name.
  private func adopt(_ keys: [PropertyListKey]) -> String {
    do {
      return try store.edit { tx -> String in
        let stored = tx.stored(forName: DefaultsSync.stateKey)
        var state = SyncState(stored) ?? SyncState(device: UUID().uuidString)
        let own = store.hub.storage.snapshot()
        for key in keys { state.adopt(key, current: own[key]) }
        if SyncState(stored) != state { tx.record(.set(state.propertyListValue), forName: DefaultsSync.stateKey) }
        return state.device
      }
    } catch {
      report(error as? DefaultsError ?? .syncFailed(reason: "\(error)"))
      return work.withLock { $0.device } ?? UUID().uuidString
    }
  }

  /// Asks the remote to exchange now; a failure is reported (the sync goes on with what the remote has).
  func synchronizeRemote() {
    ForegroundAsks.asked(remote, at: now())
    do {
      try remote.synchronize()
    } catch {
      report(error)
      setStatus(.problem(error))
    }
  }

  func stop() {
    let (receivers, token) = work.withLock { work in
      work.ended = true
      defer { (work.receivers, work.remoteToken) = ([], nil) }
      return (work.receivers, work.remoteToken)
    }
    token?.cancel()
    for (key, receiver) in receivers { store.hub.remove(receiver, forKey: key.string) }
  }

  // MARK: Scheduling

  /// A synced key changed in the store (a write of this process, another process's save, a pull).
  private func changed(_ key: PropertyListKey) {
    schedule(changed: [key])
  }

  private func remoteChanged(_ change: DefaultsRemoteChange) {
    switch change.reason {
    case .accountChange:
      work.withLock { $0.accountChanged = true }
      schedule(pull: [])
    case .quotaViolation:
      report(.syncQuotaExceeded)
      setStatus(.problem(.syncQuotaExceeded))
    case .initialSync:
      // A push was discarded: the device's first download from the server has not happened yet (Apple's
      // NSUbiquitousKeyValueStoreInitialSyncChange). Every key is looked at again later, backing off (a push before
      // the download ends is discarded again), and at the download's own changes.
      let delay = work.withLock { work -> Int in
        defer { work.initialSyncRetry = min(work.initialSyncRetry * 2, Self.longestInitialSyncRetry) }
        return work.initialSyncRetry
      }
      queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in self?.schedule(pull: []) }
    case .foreground:
      // At most once a minute (``ForegroundAsks``); every key is looked at all the same.
      if ForegroundAsks.mayAsk(remote, at: now()) { synchronizeRemote() }
      schedule(pull: [])
    case .serverChange:
      // After a push the server discarded before the device's first download (`initialSync`), this change may be
      // that download: every key is looked at again now, not at the next retry (its keys are the account's, which
      // need not name the discarded one, and the retry may be up to a minute away after a long wait).
      let discarded = work.withLock { work -> Bool in
        defer { work.initialSyncRetry = Self.firstInitialSyncRetry }
        return work.initialSyncRetry != Self.firstInitialSyncRetry
      }
      schedule(pull: discarded ? [] : change.keys.map { keys in Set(keys.map { PropertyListKey($0) }) } ?? [])
    }
  }

  /// Asks for a run: `changed` keys looked at locally, `pull` keys (empty: all) with the remote.
  func schedule(changed: Set<PropertyListKey> = [], pull: Set<PropertyListKey>? = nil) {
    let start = work.withLock { work -> Bool in
      guard !work.ended else { return false }
      work.changed.formUnion(changed)
      if let pull {
        if pull.isEmpty || work.pull?.isEmpty == true {
          work.pull = []
        } else {
          work.pull = (work.pull ?? []).union(pull)
        }
      }
      defer { work.scheduled = true }
      return !work.scheduled
    }
    if start { dispatch(urgent: pull != nil) }
  }

  /// Queues a run: at once for the remote's changes, after ``coalescing`` for local writes alone (a burst of writes
  /// is stamped and pushed in one run, and the writing thread does not meet the sync's edit at every write).
  private func dispatch(urgent: Bool) {
    if urgent || coalescing == .zero {
      queue.async { [self] in run() }
    } else {
      queue.asyncAfter(deadline: .now() + .nanoseconds(Int(coalescing / .nanoseconds(1)))) { [self] in run() }
    }
  }

  /// Runs `action` once every run asked for so far is done (tests and ``DefaultsSync/waitUntilIdle(timeout:)``).
  func whenIdle(_ action: @escaping @Sendable () -> Void) {
    let now = work.withLock { work -> Bool in
      if work.scheduled { work.idleWaiters.append(action) }
      return !work.scheduled
    }
    if now { action() }
  }

  // MARK: A run

  private var device: String { work.withLock { $0.device } ?? UUID().uuidString }

  /// Runs the work asked for so far; queues the next run when more came meanwhile, else tells those waiting for the
  /// sync to be idle.
  private func run() {
    let batch = work.withLock { work -> SyncBatch? in
      guard !work.ended, !work.changed.isEmpty || work.pull != nil || work.accountChanged else { return nil }
      defer { (work.changed, work.pull, work.accountChanged) = ([], nil, false) }
      return SyncBatch(keys: work.keys, changed: work.changed, pull: work.pull, accountChanged: work.accountChanged)
    }
    if let batch { run(batch) }
    let (next, waiters) = work.withLock { work -> (Bool?, [@Sendable () -> Void]) in
      guard work.ended || (work.changed.isEmpty && work.pull == nil && !work.accountChanged) else {
        return (work.pull != nil || work.accountChanged, [])
      }
      work.scheduled = false
      defer { work.idleWaiters = [] }
      return (nil, work.idleWaiters)
    }
    if let urgent = next { dispatch(urgent: urgent) }
    for waiter in waiters { waiter() }
  }

  private func run(_ batch: SyncBatch) {
    setStatus(.syncing)
    var problem: DefaultsError?
    do {
      let pulled = batch.pull == nil ? nil : pull()
      let remoteEntries = pulled?.entries
      let looked = batch.pull.map { pull in pull.isEmpty ? batch.keys : batch.keys.filter(pull.contains) } ?? []
      // A synced folder skips such entries itself, so that they hide no other device's.
      var (pushes, refusals) = try decide(
        batch, withRemote: looked, remoteEntries: remoteEntries,
        refusedForValue: pulled?.refusedForValue.filter { looked.contains($0.key) } ?? [:])
      for (key, refusal) in pulled?.refusals ?? [:] where looked.contains(key) {
        refusals[key] = refusals[key] ?? refusal
      }
      problem = try push(pushes, remoteEntries: remoteEntries)
      let refusal = refused(refusals.values.sorted { $0.key < $1.key })
      problem = problem ?? refusal
    } catch {
      let failure = error as? DefaultsError ?? .syncFailed(reason: "\(error)")
      report(failure)
      problem = failure
    }
    setStatus(problem.map { .problem($0) } ?? .idle)
  }

  /// The remote's entries; a synced folder's, of those whose values decode as their keys' types (its other entries
  /// would hide the ones this device can take: every device's file holds its own), with what it skipped.
  private func pull() -> SyncedFolder.Pull {
    guard let folder = remote as? SyncedFolder else { return SyncedFolder.Pull(entries: remote.entries()) }
    let decoders = work.withLock { $0.decoders }
    return folder.pull { key, value in decoders[key]?(value) ?? true }
  }

  /// Decides the batch in one edit (stamps, pulled values and the state written together, under the suite's lock);
  /// returns what to push. A batch that, on the values this process sees, would change nothing takes no edit: a
  /// remote change this device already holds, a write already stamped (the writing thread then never waits for the
  /// sync's edit).
  /// Also returns the remote entries refused (``SyncDecision/refusals``).
  private func decide(
    _ batch: SyncBatch, withRemote: [PropertyListKey], remoteEntries: [String: PropertyListValue]?,
    refusedForValue: [PropertyListKey: SyncStamp]
  ) throws -> (pushes: [PropertyListKey: SyncEntry], refusals: [PropertyListKey: SyncRefusal]) {
    // Decoded here, before the edit: a key's type may be the app's own, whose decoding must not run under the
    // suite's locks.
    let decoders = work.withLock { $0.decoders }
    var undecodable: Set<PropertyListKey> = []
    for key in withRemote {
      guard let decodes = decoders[key], let entry = remoteEntries?[key.string].flatMap(SyncEntry.init),
        let value = entry.value, !decodes(value)
      else { continue }
      undecodable.insert(key)
    }
    let decodes: (PropertyListKey, PropertyListValue) -> Bool = { key, _ in !undecodable.contains(key) }
    let seen = SyncState(store.hub.storage.value(forKey: DefaultsSync.stateKey))
    if let seen, !batch.accountChanged {
      let dry = SyncDecision(
        batch, state: seen, own: store.hub.storage.snapshot(), withRemote: withRemote, remoteEntries: remoteEntries,
        time: now(), decodes: decodes, refusedForValue: refusedForValue)
      if dry.state == seen && dry.writes.isEmpty && dry.pushes.isEmpty { return ([:], dry.refusals) }
    }
    // A write of this process made while the edit runs waits for it (``ChangeHub/edit(_:)``): it lands after the pulled
    // values, is heard as a change of the key, and is stamped and pushed by the next run.
    return try store.edit { tx in
      let before = SyncState(tx.stored(forName: DefaultsSync.stateKey)) ?? SyncState(device: device)
      let looked = store.hub.storage.snapshot()
      Self.editLooked.withLock { $0 }?(store)
      let decided = SyncDecision(
        batch, state: before, own: looked, withRemote: withRemote, remoteEntries: remoteEntries, time: self.now(),
        decodes: decodes, refusedForValue: refusedForValue)
      for write in decided.writes { tx.record(write.write, forName: write.key) }
      if decided.state != before { tx.record(.set(decided.state.propertyListValue), forName: DefaultsSync.stateKey) }
      return (decided.pushes, decided.refusals)
    }
  }

  /// Reports each refusal not reported before (once per device and key); returns the first refusal's problem, for
  /// the status, or nil when there is none.
  private func refused(_ refusals: [SyncRefusal]) -> DefaultsError? {
    let new = work.withLock { work in
      refusals.filter { work.reportedRefusals.insert([$0.device, $0.key.string]).inserted }
    }
    for refusal in new { report(refusal.problem) }
    return refusals.first?.problem
  }

  /// Pushes what fits the remote's limits (the rest is refused and reported), then records what the remote took.
  private func push(_ pushes: [PropertyListKey: SyncEntry], remoteEntries: [String: PropertyListValue]?) throws
    -> DefaultsError?
  {
    guard !pushes.isEmpty else { return nil }
    let entries = Dictionary(uniqueKeysWithValues: pushes.map { ($0.key.string, $0.value.propertyListValue) })
    let refused = SyncLimits.refusals(
      entries, remote: remoteEntries ?? remote.entries(), limits: remote.limits)
    var firstProblem: DefaultsError?
    for (key, reason) in refused.sorted(by: { $0.key < $1.key }) {
      let problem = DefaultsError.syncRefused(
        key: key, reason: "its write was not pushed: \(reason); shorten the key or keep the value in a file")
      report(problem)
      firstProblem = firstProblem ?? problem
    }
    let accepted = entries.filter { refused[$0.key] == nil }
    guard !accepted.isEmpty else { return firstProblem }
    // A run under way when its sync is cancelled still pushes what it stamped: a new sync of the store may have
    // looked before the stamp was recorded, and would not push it.
    try remote.store(accepted, from: device)
    try store.edit { tx in
      guard var state = SyncState(tx.stored(forName: DefaultsSync.stateKey)) else { return }
      let before = state
      for (key, entry) in pushes where accepted[key.string] != nil { state.pushed(key, entry) }
      if state != before { tx.record(.set(state.propertyListValue), forName: DefaultsSync.stateKey) }
    }
    return firstProblem
  }

  // MARK: Status and problems

  private func report(_ problem: DefaultsError) {
    guard !work.withLock({ $0.ended }) else { return }
    store.hub.announce(problem)
  }

  private func setStatus(_ status: DefaultsSync.Status) {
    let observers = work.withLock { work -> [@Sendable (DefaultsSync.Status) -> Void] in
      guard work.status != status else { return [] }
      work.status = status
      return Array(work.statusObservers.values)
    }
    for observer in observers { observer(status) }
  }

  var status: DefaultsSync.Status { work.withLock { $0.status } }

  func observeStatus(_ handler: @escaping @Sendable (DefaultsSync.Status) -> Void) -> DefaultsObservation {
    let (id, current) = work.withLock { work in
      work.nextObserver += 1
      work.statusObservers[work.nextObserver] = handler
      return (work.nextObserver, work.status)
    }
    handler(current)
    return DefaultsObservation { [weak self] in self?.work.withLock { _ = $0.statusObservers.removeValue(forKey: id) } }
  }
}

/// Hears a synced key's changes in the store (any source: this process, another, a pull).
final class SyncKeyReceiver: ChangeReceiver {
  let onChange: @Sendable (PropertyListValue?) -> Void

  init(_ onChange: @escaping @Sendable (PropertyListValue?) -> Void) {
    self.onChange = onChange
  }

  func receive(_ stored: PropertyListValue?, version: UInt64, notify: Bool) {
    if notify { onChange(stored) }
  }
}
