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
