import Foundation
import Synchronization

/// Edits and imports, straight into the file under its lock (for ChangeHub+Transactions.swift).
extension SuitePersistence {
  /// Writes `entries` into the suite's file in one atomic save, keeping its other keys, under the suite's lock
  /// (``commit(_:findings:loadingCopy:committed:)``). Observers of changed keys are told after the locks.
  /// `loadingCopy`: see ``FileRecord/merge(_:loadingCopy:)``.
  func merge(_ entries: [PropertyListKey: PropertyListValue], loadingCopy: Bool = true) throws(DefaultsError) {
    var findings = Findings()
    findings.changedElsewhere = true
    defer { act(on: findings) }
    do {
      try record.locked { () throws(SaveFailure) in
        do throws(DefaultsError) {
          try commit(entries.map { ($0.key, $0.value) }, findings: &findings, loadingCopy: loadingCopy) {}
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
    _ changes: [(key: PropertyListKey, value: PropertyListValue?)], findings: inout Findings,
    loadingCopy: Bool = true, committed: () -> Void
  ) throws(DefaultsError) {
    guard let hooks else {
      return try commitExcludingWrites(changes, findings: &findings, loadingCopy: loadingCopy, committed: committed)
    }
    var failure: DefaultsError?
    _ = hooks.excludingWrites {
      do throws(DefaultsError) {
        try commitExcludingWrites(changes, findings: &findings, loadingCopy: loadingCopy, committed: committed)
      } catch {
        failure = error
      }
      return true
    }
    if let failure { throw failure }
  }

  private func commitExcludingWrites(
    _ changes: [(key: PropertyListKey, value: PropertyListValue?)], findings: inout Findings, loadingCopy: Bool,
    committed: () -> Void
  ) throws(DefaultsError) {
    // corelibs' copy is dropped at the end: it must hold nothing unsaved, neither writes of ours nor plain
    // `UserDefaults` writes of this process (a synchronize saves those).
    if hasPendingWrites {
      try save(into: &findings)
    } else {
      let saved: Bool
      do throws(SaveFailure) { saved = try record.saveForeignWrites() } catch { throw file.failure(error) }
      guard saved else {
        throw .saveFailed(path: file.path, reason: "Foundation could not save its copy of the suite")
      }
      // What corelibs saved there is plain `UserDefaults` writes of this process, which the edit's changes do not
      // name: observers re-read their keys after the edit (a stamp cannot tell whether it saved any: an in-place
      // write of the same size in the same tick of the file system's clock keeps it).
      findings.changedElsewhere = true
    }
    do throws(SaveFailure) {
      if let issue = try record.merge(changes, loadingCopy: loadingCopy) { findings.issues.append(issue) }
    } catch {
      throw file.failure(error)
    }
    committed()
  }

  /// The file's entries as saved, read under its lock (``DefaultsStore/savedEntries()``).
  func savedEntries() throws(DefaultsError) -> [PropertyListKey: PropertyListValue] {
    var problem: SuiteFileProblem?
    let entries: [PropertyListKey: PropertyListValue]
    do {
      entries = try record.locked { () throws(SaveFailure) -> [PropertyListKey: PropertyListValue] in
        do throws(SuiteFileProblem) {
          return try file.savedEntries() ?? [:]
        } catch {
          problem = error
          return [:]
        }
      }
    } catch {
      throw file.failure(error)
    }
    if let problem { throw .unreadableFile(path: file.path, reason: problem.reason, backup: nil) }
    return entries
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
                path: file.path,
                reason: record.cannotLoad ?? "Foundation's copy of the suite could not be reloaded from the file"))
          }
        }
        return Result { try body(&findings) }
      }
    } catch {
      throw file.failure(error)
    }
    return try outcome.get()
  }
}
