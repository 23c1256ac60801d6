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
  /// handles the file, in any process using the library, through the file's lock), and the suite is first made the file
  /// as it is now. `body` reads through storage and returns the writes to apply; they are applied, and saved, before
  /// the lock is released. Observers are told after every lock, once per key that changed.
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
    // With a persistence (a file store; a suite on Linux): the writes go straight into the file, then into memory and
    // the observers' record, with no write of ours in between; a failure leaves all three as they were.
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
      applied = applyHoldingGate(writes, allOrNothing: true)
      if let refusal = applied.firstRefused { throw refusal }
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
    for issue in applied.issues { announce(issue) }
    // Another process's changes, seen by the reload: the keys the edit wrote are recorded already, so each observer
    // hears of a key once, with its final value.
    persistence?.act(on: findings)
    HubRegistry.didWrite(applied.written, through: self)
    return outcome
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
