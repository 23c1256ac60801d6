extension DefaultsStore {
  /// Reads and writes several keys as one step that no other edit of the suite can interleave with: a
  /// read-modify-write that loses no update, even across processes on Linux.
  ///
  /// ```swift
  /// try store.edit { tx in
  ///   tx[.launchCount] += 1
  ///   tx[.lastLaunch] = .now
  /// }
  /// let total = try store.edit { tx in tx[.score] + tx[.bonus] }
  /// ```
  ///
  /// - The body sees the suite's freshest values: on Linux the suite is reloaded under the suite's lock first, so the
  ///   last save of any other process is included.
  /// - Its writes are kept in the ``DefaultsTransaction`` until it returns; then they are applied and, on Linux,
  ///   saved before the lock is released. If the body throws, nothing is written.
  /// - Observers are told after every lock is released, once per key that changed, with its final value.
  /// - Edits of one suite run one at a time: across threads everywhere; across processes that use the library on
  ///   Linux (the suite's `flock`). On Apple platforms the preferences daemon offers no lock between processes:
  ///   there, an edit is atomic within the process only. Plain writes (`store[key] = …`) do not wait for edits.
  /// - The calling thread waits while another edit of the suite runs (and, on Linux, for the save), so keep the
  ///   body short and free of slow work.
  ///
  /// - Parameter body: Reads and writes through the transaction; it must not edit this suite again (that throws
  ///   ``DefaultsError/reentrantEdit(suite:)``). Writes made in it through a store are not part of the transaction.
  /// - Returns: What the body returned.
  /// - Throws: The body's error (nothing written); ``DefaultsError/reentrantEdit(suite:)``;
  ///   ``DefaultsError/encodingFailed(key:type:reason:)`` or ``DefaultsError/invalidKey(_:)`` for a write of the
  ///   body (nothing written); ``DefaultsError/saveFailed(path:reason:)`` when the suite could not be locked,
  ///   reloaded or saved: then the file is as it was, and so are the values in memory.
  @discardableResult
  public func edit<Result>(_ body: (inout DefaultsTransaction) throws -> Result) throws -> Result {
    var issues: [DefaultsError] = []
    // Told after the edit's locks are released, whatever the outcome.
    defer { for issue in issues { report(issue) } }
    return try hub.edit { () throws -> (outcome: Result, writes: [(key: String, write: StorageWrite)]) in
      var transaction = DefaultsTransaction(store: self)
      defer { issues = transaction.issues }
      let outcome = try body(&transaction)
      if let failure = transaction.failure { throw failure }
      return (outcome, transaction.pendingWrites)
    }
  }

  /// The reserved key under which ``migrate(_:)`` records the identities of the steps applied so far, as an array
  /// of strings: `ReactiveDefaults.migrations`. ``keys`` leaves it out, and ``removeAll()`` keeps it (so that
  /// migrations are not applied again); `rdefaults read` shows it like any other key.
  public static let migrationsKey = "ReactiveDefaults.migrations"

  /// Applies, in order, the steps not applied to this suite before, as one ``edit(_:)``, and records them.
  ///
  /// ```swift
  /// try store.migrate([
  ///   .rename("volumeLevel", to: .volume),
  ///   .convert(.theme, from: Int.self) { $0 == 1 ? .dark : .light },
  ///   .custom("2026-split-layout") { tx in tx[.columns] = tx[.isSplit] ? 2 : 1 },
  /// ])
  /// ```
  ///
  /// Call it once at launch, before other reads, with every step the app ever shipped (only new ones run). Each
  /// step has a stable identity (``DefaultsMigration/identity``), recorded under ``migrationsKey``; two processes
  /// migrating at once (on Linux) apply each step once, since the edit holds the suite's lock.
  ///
  /// - Parameter steps: The steps, oldest first.
  /// - Returns: The identities of the steps applied now (empty when all were applied before).
  /// - Throws: ``DefaultsError/migrationFailed(step:key:reason:)`` when a step finds a value of the wrong type or
  ///   throws, or two steps share an identity: then no step of this call is applied or recorded. The errors of
  ///   ``edit(_:)``.
  @discardableResult
  public func migrate(_ steps: [DefaultsMigration]) throws -> [String] {
    // Identities compare by their exact characters, as the recorded list's strings do in the file.
    var identities = Set<PropertyListKey>()
    for step in steps where !identities.insert(PropertyListKey(step.identity)).inserted {
      throw DefaultsError.migrationFailed(
        step: step.identity, key: nil, reason: "two steps have this identity; give one of them another name")
    }
    return try edit { tx in
      let recorded = tx.stored(forName: Self.migrationsKey)
      var applied: [String]
      switch recorded {
      case nil: applied = []
      case .array(let items)?:
        applied = try items.map { item in
          guard case .string(let identity) = item else {
            throw DefaultsError.migrationFailed(
              step: "", key: Self.migrationsKey, reason: "holds \(item.kindName) in its list, not only strings")
          }
          return identity
        }
      case let other?:
        throw DefaultsError.migrationFailed(
          step: "", key: Self.migrationsKey, reason: "holds \(other.kindName), not an array of strings")
      }
      let done = Set(applied.map { PropertyListKey($0) })
      var appliedNow: [String] = []
      for step in steps where !done.contains(PropertyListKey(step.identity)) {
        do {
          try step.apply(&tx)
          if let failure = tx.failure { throw failure }
        } catch let error as DefaultsError {
          if case .migrationFailed = error { throw error }
          throw DefaultsError.migrationFailed(step: step.identity, key: error.key, reason: "\(error)")
        } catch {
          throw DefaultsError.migrationFailed(step: step.identity, key: nil, reason: "\(error)")
        }
        applied.append(step.identity)
        appliedNow.append(step.identity)
      }
      if !appliedNow.isEmpty {
        tx.record(.set(.array(applied.map(PropertyListValue.string))), forName: Self.migrationsKey)
      }
      return appliedNow
    }
  }
}

extension DefaultsError {
  /// The key the error is about, when there is one.
  fileprivate var key: String? {
    switch self {
    case .typeMismatch(let key, _, _), .encodingFailed(let key, _, _), .invalidKey(let key),
      .domainTooLarge(let key, _, _), .domainNearingLimit(let key, _, _), .documentUnavailable(let key, _, _),
      .documentNotRenewed(let key, _, _), .syncRefused(let key, _):
      key
    case .migrationFailed(_, let key, _): key
    case .unreadableFile, .saveFailed, .reentrantEdit, .syncQuotaExceeded, .syncFailed: nil
    }
  }
}
