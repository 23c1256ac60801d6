import Foundation

/// A suite file's merges (imports and edits: changes written straight into the file, under the suite's lock) and
/// reloads (corelibs' copy made the file as it is), beside the save of SuiteFileRecord.swift.
extension SuiteFileRecord {
  /// Writes `changes` into the suite's file (a nil value removes its key), keeping its other keys, as one atomic
  /// replacement (a flushed journal, then a rename), then has corelibs drop its copy and load the file at once. Call
  /// it holding the suite's lock, with nothing unsaved in corelibs and no write in progress: corelibs'
  /// copy is dropped, not merged. Much cheaper than writing many keys through corelibs, whose cost per new key
  /// grows with the number of unsaved keys; and a failure leaves both the file and memory as they were.
  /// Returns the problem the check found (an unreadable file, backed up, that is replaced).
  ///
  /// With `loadingCopy` false, corelibs' copy is dropped and not loaded (a tool that exits right after reads nothing
  /// more): memory then counts as not the file, so a read that looks at the file reloads it under the lock.
  func merge(_ changes: [(key: PropertyListKey, value: PropertyListValue?)], loadingCopy: Bool) throws(SaveFailure)
    -> DefaultsError?
  {
    try locked { () throws(SaveFailure) -> DefaultsError? in
      let check = try check()
      let (domain, savedStamp) = try commitMerge(changes, into: entriesOnDisk(check))
      // Committed. Until corelibs drops its copy, reads give the values from before, never a mix.
      guard loadingCopy else {
        guard try dropCorelibsCopy() else {
          corelibs.record(.untrusted)
          throw SaveFailure("the file was saved, but Foundation's copy of the suite could not be dropped")
        }
        corelibs.record(.untrusted)
        return check.issue
      }
      Progress.report(.loading, done: 0, of: 0)
      guard try reloadCopy() else {
        corelibs.record(.untrusted)
        throw SaveFailure("the file was saved, but Foundation's copy of the suite could not be reloaded")
      }
      markSynced(at: savedStamp, entries: domain)
      return check.issue
    }
  }

  /// Makes the suite in memory the file as it is now: checks the file, then has `dropCache` drop corelibs' cached
  /// copy (``CorelibsDomain/dropCopy(file:)``, run by `whenIdle` while no write of ours runs) unless something is unsaved,
  /// then loads the file. Returns the problem found and whether the cache was dropped (else the caller saves, which
  /// also reloads).
  func reload(whenIdle: (() -> Bool) -> Bool) throws(SaveFailure) -> (issue: DefaultsError?, reloaded: Bool) {
    try locked { () throws(SaveFailure) -> (issue: DefaultsError?, reloaded: Bool) in
      let check = try check()
      // Nothing to load while a FIFO, socket or device stands there (``specialFile()``): memory stays as it is, not
      // the file, and no save is tried in place of the reload (it would fail the same way, at every read).
      if specialFile() != nil { return (check.issue, true) }
      // corelibs' copy is dropped twice while no write of ours runs (see ``CorelibsDomain/dropCopy(file:)``), journaled.
      var journalFailure: SaveFailure?
      let dropped = whenIdle {
        do throws(SaveFailure) { return try dropCorelibsCopy() } catch {
          journalFailure = error
          return false
        }
      }
      if let journalFailure { throw journalFailure }
      guard dropped else { return (check.issue, false) }
      // Stamped before the load: a writer that takes no lock and changes the file from now on is seen as a change
      // at its event, never taken for the version loaded here.
      let stamp = file.stamp()
      corelibs.load()
      markSynced(at: stamp)
      noteLoaded(at: stamp)
      return (check.issue, true)
    }
  }
}
