import Foundation
import Synchronization

/// When and how the file is saved: writes recorded, coalesced saves scheduled, the save, the save in the background
/// and at exit.
extension SuitePersistence {
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
      let delay = saveDelay
      lastScheduledDelay.store(delay, ordering: .relaxed)
      background.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [weak self] in
        guard let self else { return }
        if self.state.withLock({ $0.sync.timerFired() }) == .save { self.saveReportingFailure() }
      }
    }
  }

  var hasUnsavedWrites: Bool { state.withLock { $0.sync.hasUnsavedWrites } }

  /// Changes the saving state.
  private func changingSync<T: Sendable>(_ body: (inout SuiteSync) -> T) -> T {
    state.withLock { body(&$0.sync) }
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
    let started = monotonicNanoseconds()
    defer { lastSaveDuration.store(monotonicNanoseconds() &- started, ordering: .relaxed) }
    var turn = SaveTurn()
    do throws(SaveFailure) {
      let outcome: SaveOutcome
      switch record.kind {
      case .suite(let suite): outcome = try saveSuite(suite, &turn)
      case .fileStore(let store): outcome = try saveFileStore(store, &turn)
      }
      if let issue = outcome.issue { findings.issues.append(issue) }
      // The save merged another process's changes into memory.
      if outcome.changedElsewhere { findings.changedElsewhere = true }
      end(&turn)
    } catch {
      // The writes are back on the list, behind any write made since (its value is the newer one), unless they were
      // in the file already (the failure came after: the folder's flush).
      if turn.took && !turn.ended, changingSync({ $0.saveEnded(unsaved: turn.writes) }) == .registerForExit {
        SaveOnExit.add(self)
      }
      throw file.failure(error)
    }
  }

  /// The writes a save took, and whether it ended.
  struct SaveTurn {
    var writes: [PropertyListKey: PropertyListValue?] = [:]
    var took = false
    /// Ended as soon as the writes are in the file (under its lock), not after the folder's flush: until then another
    /// save counts this one as running, and may not drop corelibs' copy.
    var ended = false
  }

  /// Takes the unsaved writes off the pending list. Call it holding the file's lock, never before: a save that took
  /// them and then waited for the lock would apply their values after whatever held it (an edit, another save of
  /// ours) had saved newer ones.
  func take(_ turn: inout SaveTurn) -> [PropertyListKey: PropertyListValue?] {
    turn.writes = changingSync { $0.saveBegan() }
    turn.took = true
    SaveOnExit.remove(self)
    return turn.writes
  }

  /// The writes are in the file (call it under its lock).
  func end(_ turn: inout SaveTurn) {
    if turn.took && !turn.ended { _ = changingSync { $0.saveEnded() } }
    turn.ended = true
  }

  /// Runs `body` while no write of ours is in progress in any hub attached when the save began (`hooks`: their write
  /// gates, entered in the order they were attached; none: at once). A failure is thrown once the gates are open.
  func withoutWrites<T, Failure: Error>(_ hooks: Hooks?, _ body: () throws(Failure) -> T) throws(Failure) -> T {
    var result: Result<T, Failure>?
    func run() -> Bool {
      do throws(Failure) { result = .success(try body()) } catch { result = .failure(error) }
      return true
    }
    _ = hooks?.excludingWrites(run) ?? run()
    guard let result else { preconditionFailure("a write gate returned without running its body") }
    return try result.get()
  }

  /// A file store's save: the plain atomic replacement (``PlainFileRecord``'s steps).
  private func saveFileStore(_ store: PlainFileRecord, _ turn: inout SaveTurn) throws(SaveFailure) -> SaveOutcome {
    // Taking the lock creates the folder: a save with nothing to write into a folder that does not exist creates
    // nothing (what is unsaved is only looked at here; it is taken under the lock).
    if unsavedWrites.isEmpty && !store.folderExists { return SaveOutcome() }
    let hooks = hooks
    var outcome = try store.locked { () throws(SaveFailure) -> SaveOutcome in
      // The stamp after the check, as the check's read is of that file (or newer): known entries of an older stamp
      // never stand in for a file another writer replaced in between.
      let (check, stamp) = try store.checkThenStamp()
      let save = try store.commitSave(check, at: stamp, writes: take(&turn))
      noteSaveCommitted()
      if check.changedElsewhere {
        withoutWrites(hooks) { store.adoptMerged(save, writesMadeSince: unsavedWrites) }
      }
      let outcome = store.finishSave(save, merged: check.changedElsewhere)
      end(&turn)
      return outcome
    }
    store.flushFolderAfterSave(&outcome)
    return outcome
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
