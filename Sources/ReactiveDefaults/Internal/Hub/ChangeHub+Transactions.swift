import Foundation

/// Transactions over the hub's suite: ``edit(_:)`` (``DefaultsStore/edit(_:)``, `update`) and ``merge(_:)`` (imports).
/// Where the library handles the file (a file store on every platform, a named suite on Linux) they go straight into
/// it under its lock (``SuitePersistence/exclusively(_:_:)``); in memory, and for suites on Apple platforms, they are
/// writes through the hub's gate, one after another, that no other write interleaves.
extension ChangeHub {
  /// The suite as error messages name it.
  var suiteDescription: String {
    if let suiteName { return suiteName }
    if storage.persistence != nil { return "the standard suite" }
    return storage.userDefaults == nil ? "an in-memory suite" : "a UserDefaults instance"
  }

  /// Runs `body` as one transaction: no other edit of the suite runs meanwhile (in this process; where the library
  /// handles the file, in any process using the library, through the file's lock), no write through a store of this
  /// hub (every store of the suite made by name or file; on Apple platforms a store over an app's own instance has a
  /// hub of its own) lands while `body` runs (they wait for the edit: an edit never overwrites a write it did not
  /// see), and the suite is first made the file as it is now. `body` reads through storage and returns the writes to
  /// apply; they are applied, and saved, before the locks are released. A write `body` makes itself through a store of
  /// the suite (not through the transaction) is applied right after the edit's writes. Observers are told after every
  /// lock, once per key that changed.
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
    /// The writes made meanwhile through the gate by this thread (queued while the edit held it), applied after the
    /// edit's; applying them opens the gate.
    var queued = Applied()
    // The body is the caller's code, run holding the gate as part of the edit: like the file's lock, the gate does not
    // count for the lock order meanwhile (``LockOrder``: an edit's body may write, save or edit another suite).
    func runBody() throws -> (outcome: Outcome, writes: [(key: String, write: StorageWrite)]) {
      LockOrder.released(.writeGate)
      gate.setInEditBody(true)
      defer {
        gate.setInEditBody(false)
        LockOrder.taking(.writeGate)
      }
      return try body()
    }
    // With a persistence (a file store; a suite on Linux): the writes go straight into the file, then into memory and
    // the observers' record, with no write of ours in between; a failure leaves all three as they were.
    func commit(_ findings: inout SuitePersistence.Findings, to persistence: SuitePersistence) throws -> Outcome {
      // The gate after the file's lock (the lock order): held from the body's first read to the last write.
      gate.enterForSeveralWrites()
      defer { queued = applyHoldingGate([]) }
      let (outcome, writes) = try runBody()
      guard !writes.isEmpty else { return outcome }
      let changes = writes.map { (key: PropertyListKey($0.key), value: $0.write.storedValue) }
      try persistence.commit(changes, findings: &findings) {
        applied.fanouts = state.withLock { state in changes.compactMap { state.record($0.value, forKey: $0.key.string) }
        }
        applied.written = changes.map(\.key.string)
      }
      return outcome
    }
    // Memory and Apple platforms: nothing to save; the writes go to storage one after another, through the gate, then
    // the writes queued meanwhile.
    func apply() throws -> Outcome {
      gate.enterForSeveralWrites()
      let result: (outcome: Outcome, writes: [(key: String, write: StorageWrite)])
      do {
        result = try runBody()
      } catch {
        queued = applyHoldingGate([])
        throw error
      }
      guard !result.writes.isEmpty else {
        queued = applyHoldingGate([])
        return result.outcome
      }
      applied = applyHoldingGate(result.writes, allOrNothing: true)
      if let refusal = applied.firstRefused { throw refusal }
      return result.outcome
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
      // What did happen: the writes queued meanwhile (in memory, also when the edit's writes were refused).
      finish(applied)
      finish(queued, announcingRefusal: true)
      persistence?.act(on: findings)
      throw error
    }
    for fanout in applied.fanouts { fanout.deliver() }
    for issue in applied.issues { announce(issue) }
    finish(queued, announcingRefusal: true)
    // Another process's changes, seen by the reload: the keys the edit wrote are recorded already, so each observer
    // hears of a key once, with its final value.
    persistence?.act(on: findings)
    HubRegistry.didWrite(applied.written, through: self)
    return outcome
  }

  /// What ``write(_:forKey:)`` does after its write, for writes applied holding the gate: saving, observers, other
  /// hubs, issues (with `announcingRefusal`, the first refusal too: a write queued during an edit has no caller to
  /// return it to).
  func finish(_ applied: Applied, announcingRefusal: Bool = false) {
    persistence?.perform(applied.saving)
    for fanout in applied.fanouts { fanout.deliver() }
    HubRegistry.didWrite(applied.written, through: self)
    if announcingRefusal, let refusal = applied.firstRefused { announce(refusal) }
    for issue in applied.issues { announce(issue) }
  }

  /// Writes many keys at once, atomically: with a persistence (a file store; a suite on Linux)
  /// straight into the file (one save, whatever the number of keys), else as one edit. `loadingCopy`: see
  /// ``FileRecord/merge(_:loadingCopy:)``.
  func merge(_ entries: [PropertyListKey: PropertyListValue], loadingCopy: Bool = true) throws(DefaultsError) {
    if let persistence { return try persistence.merge(entries, loadingCopy: loadingCopy) }
    do {
      try edit { ((), entries.map { (key: $0.key.string, write: StorageWrite.set($0.value)) }) }
    } catch let error as DefaultsError {
      throw error
    } catch {
      throw .saveFailed(path: suiteDescription, reason: "\(error)")
    }
  }
}
