import Foundation
import Synchronization

/// The library's handling of one suite's plist on Linux: when to save (coalesced saves, saves at once, the hand-off of
/// a dropped hub, registration for ``SaveOnExit``), edits and imports under the suite's lock, and, in
/// SuitePersistence+Reloading.swift, reloads when another process writes the file and the folder watch. Its
/// bookkeeping is the ``SuiteSync`` state machine; the file operations themselves (lock, journal, atomic rename,
/// checks and backups) are ``SuiteFileRecord``'s.
///
/// There is one per file in this process (``shared(_:make:)``), serving the hub of its suite through the ``Hooks`` the hub
/// attaches; it holds no reference to the hub, so it can outlive it: a hub dropped with unsaved writes hands them to a
/// background save (``handOff()``), never saving in `deinit`. A hub made for the suite meanwhile takes this one over,
/// with its bookkeeping: what the background save finds (another process's changes merged) reaches the new hub's
/// observers, and the two never drop or save corelibs' copy of the suite behind each other's back.
final class SuitePersistence: Sendable {
  /// What the persistence asks of its hub.
  struct Hooks: Sendable {
    /// Re-reads the observed keys and tells their observers (after a reload, or a save that merged another
    /// process's changes).
    var refresh: @Sendable () -> Void
    /// Tells the stores' issue handlers.
    var announce: @Sendable (DefaultsError) -> Void
    /// Runs the body while no write is in progress.
    var excludingWrites: @Sendable (() -> Bool) -> Bool
    /// The hub's number of observers.
    var observerCount: @Sendable () -> Int
  }

  /// What a write means for saving, decided under the lock and done after it.
  typealias WriteAction = SuiteSync.WriteAction

  struct State {
    /// The saving and reloading phases.
    var sync = SuiteSync()
    /// The tools' watchers of the whole file (``watchFile(_:)``).
    var fileWatchers: [UInt64: @Sendable () -> Void] = [:]
    var nextFileWatcherID: UInt64 = 0
    /// The hooks of the hubs attached, oldest first: one, but for the moments when a hub is dropped while another is
    /// made for the suite, or two are made at once and one is discarded.
    var hooks: [(hub: ObjectIdentifier, hooks: Hooks)] = []
  }

  /// What memory is against the file: corelibs' copy of a suite, or a file store's own.
  let record: any FileRecord
  var file: SuiteFile { record.file }
  let state = Locked(State())
  let watch = Locked<FileWatch?>(nil)
  /// Where this file's background work runs: coalesced saves, reloads on file events, the save of a dropped hub's
  /// writes. Serial, so a queue of its own: that work waits (for the file's lock, which another process may hold;
  /// for corelibs' turn; for `fsync`), and Dispatch runs a serial queue on a thread of its own when it must, where
  /// work on `DispatchQueue.global()` waits for one of as many threads as there are cores, which Swift's tasks run on
  /// too (on Linux): a few blocked saves there held back every task of the process.
  let background = DispatchQueue(label: "ReactiveDefaults.file")
  /// When a read last looked at the file (``followFile()``), on the monotonic clock.
  let lastFileCheck = Atomic<UInt64>(0)
  /// How many keys have a pending write (``pendingValue(forKey:)``), kept with the state.
  let pendingKeys = Atomic<Int>(0)

  /// How long after a write its coalesced save runs: well inside the promised 100 ms.
  static let saveDelay: DispatchTimeInterval = .milliseconds(50)
  /// Distinct keys written since the last save that trigger a save at once, at least, in a suite
  /// (``SuiteFileRecord/unsavedKeysBeforeSave``).
  static let minimumUnsavedKeysBeforeSave = 256

  /// The persistence of a suite's plist, whose memory is corelibs' copy (Linux).
  convenience init(defaults: UserDefaults, domain: CorelibsDomain) {
    self.init(record: SuiteFileRecord(file: SuiteFile(suiteName: domain.name), corelibs: domain, defaults: defaults))
  }

  /// The persistence of `record`'s file.
  init(record: any FileRecord) {
    self.record = record
    // Before corelibs reads the file: complete a save a crash interrupted, check the file (an unreadable one is kept
    // aside before any save could replace it; one corelibs could crash or hang on is moved away), and make corelibs'
    // copy the file, not an older copy it may hold, recording its stamp: from then on, reads compare it with the
    // file's (``followFile()``) until the suite is watched. Opening a suite that does not exist creates nothing.
    _ = record.open()  // a problem is kept in the record's found issues, replayed to each issue handler
    lookAgainIfRacy()
  }

  deinit {
    SaveOnExit.remove(self)
    watch.withLock { $0 }?.cancel()
  }

  /// Which file a persistence is for: a suite's plist (memory is corelibs' copy) or a file store's file (memory of its
  /// own) at a path, exactly as spelled.
  enum Identity: Hashable {
    case suite(PropertyListKey)
    case fileStore(PropertyListKey)
  }

  private struct WeakPersistence {
    weak var persistence: SuitePersistence?
  }

  /// A file's entry in the registry: its persistence, or the one being built, with the threads waiting for it.
  private enum Entry {
    case live(WeakPersistence)
    case building(waiters: [DispatchSemaphore])
  }

  private static let instances = Locked<[Identity: Entry]>([:])

  /// The persistence of a file in this process: the live one, else one `make` builds, outside the registry's lock
  /// (building one opens the file, under its lock). One is built at a time for a file: a thread that asks meanwhile
  /// waits for it. (Two built at once each opened the file, and the open of the one then dropped had corelibs drop its
  /// copy of the suite, which saves in place, without a journal, what the other's writes had left unsaved; a process
  /// killed in the middle left the file cut. The history checker found it, with several threads a process.)
  static func shared(_ identity: Identity, make: () -> SuitePersistence) -> SuitePersistence {
    enum Decision {
      case use(SuitePersistence)
      case wait(DispatchSemaphore)
      case build
    }
    while true {
      let decision = instances.withLock { instances -> Decision in
        switch instances[identity] {
        case .live(let entry)?:
          if let live = entry.persistence { return .use(live) }
        case .building(var waiters)?:
          let signal = DispatchSemaphore(value: 0)
          waiters.append(signal)
          instances[identity] = .building(waiters: waiters)
          return .wait(signal)
        case nil:
          break
        }
        instances[identity] = .building(waiters: [])
        return .build
      }
      switch decision {
      case .use(let persistence):
        return persistence
      case .wait(let signal):
        signal.wait()
      case .build:
        let made = make()
        let waiters = instances.withLock { instances -> [DispatchSemaphore] in
          // Few files are open in a process; dropping dead entries on each insertion keeps the table small.
          instances = instances.filter { _, entry in
            if case .live(let weak) = entry { return weak.persistence != nil }
            return true
          }
          let waiters: [DispatchSemaphore]
          if case .building(let waiting)? = instances[identity] { waiters = waiting } else { waiters = [] }
          instances[identity] = .live(WeakPersistence(persistence: made))
          return waiters
        }
        for waiter in waiters { waiter.signal() }
        return made
      }
    }
  }

  /// Connects the persistence to a hub of its suite.
  func attach(_ hooks: Hooks, for hub: ObjectIdentifier) {
    state.withLock { $0.hooks.append((hub, hooks)) }
  }

  /// Disconnects a hub that is going away.
  func detach(_ hub: ObjectIdentifier) {
    state.withLock { $0.hooks.removeAll { $0.hub == hub } }
  }

  /// The hooks of every hub attached, as one: each is told, `excludingWrites` holds off the writes of all of them
  /// (nested in the order they were attached), and the observers are counted over all. nil when no hub is attached.
  var hooks: Hooks? {
    let attached = state.withLock { $0.hooks.map(\.hooks) }
    guard let first = attached.first else { return nil }
    guard attached.count > 1 else { return first }
    return Hooks(
      refresh: { for hooks in attached { hooks.refresh() } },
      announce: { issue in for hooks in attached { hooks.announce(issue) } },
      excludingWrites: { body in
        func excluding(from index: Int) -> Bool {
          index == attached.count ? body() : attached[index].excludingWrites { excluding(from: index + 1) }
        }
        return excluding(from: 0)
      },
      observerCount: { attached.reduce(0) { $0 + $1.observerCount() } })
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundIssues: [DefaultsError] { record.foundIssues }

  // MARK: Saving

  /// Records a write of `key`, which stored `value` (called inside the write); returns what to do about saving,
  /// after the write.
  func wrote(_ key: String, _ value: PropertyListValue?) -> WriteAction {
    let maximum = record.unsavedKeysBeforeSave
    return changingSync { $0.wrote(PropertyListKey(key), value, saveAfter: maximum) }
  }

  /// Does what ``wrote(_:)`` decided.
  func perform(_ action: WriteAction) {
    switch action {
    case .none: break
    case .saveNow: saveReportingFailure()
    case .scheduleSave:
      SaveOnExit.add(self)
      guard state.withLock({ $0.sync.saveRequested() }) == .startTimer else { return }
      background.asyncAfter(deadline: .now() + Self.saveDelay) { [weak self] in
        guard let self else { return }
        if self.state.withLock({ $0.sync.timerFired() }) == .save { self.saveReportingFailure() }
      }
    }
  }

  var hasUnsavedWrites: Bool { state.withLock { $0.sync.hasUnsavedWrites } }

  /// Changes the saving state, keeping ``pendingKeys`` in step.
  private func changingSync<T: Sendable>(_ body: (inout SuiteSync) -> T) -> T {
    state.withLock { state in
      let result = body(&state.sync)
      pendingKeys.store(state.sync.pendingCount, ordering: .relaxed)
      return result
    }
  }

  /// The value this process last wrote to `key` while no save has finished saving it (`.some(nil)`: removed), or nil.
  /// A read of such a key gives this, never what corelibs answers: corelibs can answer from another copy of the suite
  /// (``PreferencesCalls``), and a key the app wrote must read back as written. One atomic load when nothing is
  /// pending, which is the usual case: a save runs within ``saveDelay`` of a write.
  @inline(__always)
  func pendingValue(forKey key: String) -> PropertyListValue?? {
    guard pendingKeys.load(ordering: .relaxed) > 0 else { return nil }
    return state.withLock { $0.sync.pendingValue(forKey: PropertyListKey(key)) }
  }

  /// The writes made since the last save took its writes (each key's newest stored value; nil: removed).
  var unsavedWrites: [PropertyListKey: PropertyListValue?] { state.withLock { $0.sync.unsaved } }

  /// Unsaved writes, or writes a save in progress has not finished saving: corelibs' copy must not be dropped.
  var hasPendingWrites: Bool { state.withLock { $0.sync.hasPendingWrites } }

  /// Saves now: pending writes reach disk, merged with what other processes saved. On failure the file is as it
  /// was and the writes stay pending for the next save.
  func save() throws(DefaultsError) {
    var findings = Findings()
    defer { act(on: findings) }
    try save(into: &findings)
  }

  /// What saving or reloading found, acted on once no lock is held: observers and issue handlers are called then.
  struct Findings {
    var issues: [DefaultsError] = []
    /// Another process had changed the file: observers must hear of its changes.
    var changedElsewhere = false
  }

  /// Tells the stores' issue handlers, and the observers of keys another process changed.
  func act(on findings: Findings) {
    let hooks = hooks
    for issue in findings.issues { hooks?.announce(issue) }
    if findings.changedElsewhere { hooks?.refresh() }
  }

  /// ``save()``, leaving what it found in `findings`, for the caller to act on after its locks.
  func save(into findings: inout Findings) throws(DefaultsError) {
    // Entered before the keys are taken off the pending list: a save at exit that finds nothing pending waits
    // for this one instead of letting the process end in the middle of it.
    SaveOnExit.inFlight.enter()
    defer { SaveOnExit.inFlight.leave() }
    // The keys are taken holding the suite's lock, never before: a save that took them and then waited for the lock
    // would apply their values after whatever held it (an edit, another save of ours) had saved newer ones.
    var writes: [PropertyListKey: PropertyListValue?] = [:]
    var took = false
    // Ended as soon as the writes are in the file (under its lock), not after the folder's flush: until then another
    // save counts this one as running, and may not drop corelibs' copy.
    var ended = false
    do {
      // corelibs' copy may be dropped when that cannot make it save anything: nothing unsaved, no other save
      // waiting with keys in its dirty list, and no write of ours meanwhile.
      let hooks = hooks
      let outcome = try record.save(
        takingWrites: {
          writes = changingSync { $0.saveBegan() }
          took = true
          SaveOnExit.remove(self)
          return writes
        },
        writtenSince: { self.unsavedWrites },
        excludingWrites: { body throws(SaveFailure) in
          var failure: SaveFailure?
          func run() -> Bool {
            do { try body() } catch { failure = error }
            return true
          }
          _ = hooks?.excludingWrites(run) ?? run()
          if let failure { throw failure }
        }
      ) { body in
        guard let hooks else { return self.state.withLock { $0.sync.aloneWithNothingUnsaved } && body() }
        return hooks.excludingWrites { self.state.withLock { $0.sync.aloneWithNothingUnsaved } && body() }
      } committed: {
        if took && !ended { _ = changingSync { $0.saveEnded() } }
        ended = true
      }
      if let issue = outcome.issue { findings.issues.append(issue) }
      // The save merged another process's changes into memory.
      if outcome.changedElsewhere { findings.changedElsewhere = true }
      if took && !ended { _ = changingSync { $0.saveEnded() } }
    } catch {
      // The writes are back on the list, behind any write made since (its value is the newer one), unless they were
      // in the file already (the failure came after: the folder's flush).
      if took && !ended, changingSync({ $0.saveEnded(unsaved: writes) }) == .registerForExit { SaveOnExit.add(self) }
      throw file.failure(error)
    }
  }

  /// Writes `entries` into the suite's file in one atomic save, keeping its other keys, under the suite's lock
  /// (``commit(_:findings:committed:)``). Observers of changed keys are told after the locks.
  func merge(_ entries: [PropertyListKey: PropertyListValue]) throws(DefaultsError) {
    var findings = Findings()
    findings.changedElsewhere = true
    defer { act(on: findings) }
    do {
      try record.locked { () throws(SaveFailure) in
        do throws(DefaultsError) {
          try commit(entries.map { ($0.key, $0.value) }, findings: &findings) {}
        } catch {
          throw SaveFailure(error.description)
        }
      }
    } catch {
      throw file.failure(error)
    }
  }

  /// Writes `changes` (a nil value removes its key) straight into the suite's file, holding the suite's lock (call
  /// it inside ``exclusively(_:_:)``), with no write of ours in progress meanwhile: writes of ours still unsaved are
  /// saved first, then the changes merged into the file atomically (``SuiteFileRecord/merge(_:)``), then corelibs'
  /// copy is dropped, so reads see the file. `committed` runs right after, still excluding writes: the hub records
  /// the new values there, so no write of ours can come between the file and the observers' record.
  ///
  /// - Throws: ``DefaultsError/saveFailed(path:reason:)``, and then the file, the values in memory and the
  ///   observers are as they were (unless the failure came after the file was committed, which the reason says).
  func commit(
    _ changes: [(key: PropertyListKey, value: PropertyListValue?)], findings: inout Findings, committed: () -> Void
  ) throws(DefaultsError) {
    guard let hooks else { return try commitExcludingWrites(changes, findings: &findings, committed: committed) }
    var failure: DefaultsError?
    _ = hooks.excludingWrites {
      do throws(DefaultsError) {
        try commitExcludingWrites(changes, findings: &findings, committed: committed)
      } catch {
        failure = error
      }
      return true
    }
    if let failure { throw failure }
  }

  private func commitExcludingWrites(
    _ changes: [(key: PropertyListKey, value: PropertyListValue?)], findings: inout Findings, committed: () -> Void
  ) throws(DefaultsError) {
    // corelibs' copy is dropped at the end: it must hold nothing unsaved, neither writes of ours nor plain
    // `UserDefaults` writes of this process (a synchronize saves those).
    if hasPendingWrites {
      try save(into: &findings)
    } else if !record.saveForeignWrites() {
      throw .saveFailed(path: file.path, reason: "Foundation could not save its copy of the suite")
    }
    do throws(SaveFailure) {
      if let issue = try record.merge(changes) { findings.issues.append(issue) }
    } catch {
      throw file.failure(error)
    }
    committed()
  }

  /// Runs `body` holding the suite's lock, so that no other process (or thread) saves or edits the suite meanwhile,
  /// after making the suite in memory the file as it is now: another process's last save is included. `body` must
  /// save before it returns (``save()`` works under the lock) and must not call out to unknown code. What was found
  /// is added to `findings`, to act on after the lock.
  ///
  /// - Throws: `body`'s error; ``DefaultsError/saveFailed(path:reason:)`` when the lock cannot be taken or the
  ///   suite not reloaded (writes of ours pending that cannot be saved), and then `body` does not run.
  func exclusively<T>(_ findings: inout Findings, _ body: (inout Findings) throws -> T) throws -> T {
    let outcome: Result<T, any Error>
    do {
      outcome = try record.locked { () throws(SaveFailure) -> Result<T, any Error> in
        // A journal a killed save left is that process's last save: completed first, so that the body reads it.
        try record.recoverJournal()
        if !record.isSynced {
          findings.changedElsewhere = true
          // While no write of ours runs: a write made meanwhile on another thread (unsaved when the reload's save
          // ends) would keep corelibs' copy from being dropped, and the edit from starting.
          var failure: DefaultsError?
          var reloadFindings = Findings()
          func reload() -> Bool {
            do throws(DefaultsError) { try reloadHoldingLock(&reloadFindings) } catch { failure = error }
            return true
          }
          _ = hooks?.excludingWrites(reload) ?? reload()
          findings.issues += reloadFindings.issues
          if reloadFindings.changedElsewhere { findings.changedElsewhere = true }
          if let failure { return .failure(failure) }
          // The body must not read a copy that misses another process's last save. (Whether memory is the file as
          // it is now, not `isSynced`: a load from a file modified a moment before stops counting as synced 20 ms
          // later, which a slow machine could reach before this line, and the lock keeps every writer using the
          // library out meanwhile.)
          let stamp = file.stamp()
          guard stamp == nil || record.isFile(stamp) else {
            return .failure(
              DefaultsError.saveFailed(
                path: file.path, reason: "Foundation's copy of the suite could not be reloaded from the file"))
          }
        }
        return Result { try body(&findings) }
      }
    } catch {
      throw file.failure(error)
    }
    return try outcome.get()
  }

  /// ``save()``, with a failure reported to the stores' issue handlers (the background save, the save at exit).
  func saveReportingFailure() {
    do { try save() } catch { hooks?.announce(error) }
  }

  /// The hub is going away: its unsaved writes are saved in the background (this object lives until then).
  func handOff() {
    guard hasUnsavedWrites else { return }
    background.async { [self] in saveReportingFailure() }
  }
}
