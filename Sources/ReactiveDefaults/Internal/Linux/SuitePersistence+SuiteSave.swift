import Foundation

extension SuitePersistence {
  /// A suite's save, step by step (SuiteFileRecord.swift's header says why each step is there; ``SuiteSave`` lists
  /// them with what each sets). All under the suite's lock; writes of ours held off from corelibs' save to the commit,
  /// and again while a stale copy of corelibs' is dropped; the folder flushed after the lock.
  func saveSuite(_ suite: SuiteFileRecord, _ turn: inout SaveTurn) throws(SaveFailure) -> SaveOutcome {
    // One snapshot for both entries of the write gates: a hub attached during the save is not waited for.
    let hooks = hooks
    // This save's writes, once committed, as recorded then (``WritesInCopy/marks(_:)``): forgotten at the end.
    var committed: [PropertyListKey: UInt64] = [:]
    let outcome = try suite.locked { () throws(SaveFailure) -> SaveOutcome in
      // Once corelibs' copy holds the file (loaded again when it was stale), or the save failed after its commit:
      // reads need no record of the committed writes. A stale copy kept (not dropped) does not hold them: the
      // records stay until the copy is loaded again.
      defer { suite.corelibs.writes.forget(committed, copyIsFile: suite.corelibs.memory != .untrusted) }
      // Prepare: the writes taken under the lock, the file checked, the journal's entries gathered and written.
      // A plain `UserDefaults` write of this process made after one of ours to the same key is the one saved.
      let taken = take(&turn)
      TrackedFile.saveSteps.withLock { $0[suite.file.path] }?(.afterTake)
      let writes = suite.corelibs.withLaterPlainWrites(taken)
      var save = try suite.beginSave(writes: writes)
      if writes != taken { save.keepsLaterPlainWrites = true }
      defer {
        if let trace = SuiteFile.saveTrace.withLock({ $0 }) {
          trace(suite.traceLine(save, writtenSince: unsavedWrites))
        }
      }
      try suite.gatherEntries(&save)
      // Read after corelibs' domain was copied: a write made in between is in one or the other.
      if save.needsWritesMadeSince { save.applyWritesMadeSince(unsavedWrites) }
      try suite.writeJournal(&save)
      // From corelibs' save to the commit, no write of ours runs: corelibs forgets a key is unsaved once it has
      // written it, so a write in between, saved in place by a plain `synchronize()` on another thread (any suite's:
      // corelibs then saves every domain), would be in corelibs' copy as saved, and in no file once the journal is
      // renamed over corelibs' file; corelibs would drop that copy at the next save, and reads load the file.
      try withoutWrites(hooks) { () throws(SaveFailure) in
        suite.saveWithCorelibs(&save)
        // Every write of ours up to now: this save's, and the newer ones made since it took them; and a plain
        // `UserDefaults` write of this process made since one of them, in its place (corelibs' save kept it). From
        // the writes of ours as taken, not `save.writes`: a plain write those hold in the place of ours can have
        // been followed by another that left the copy as ours had (a plain removal after a plain set, of a key ours
        // removed), and the copy as it is now is the process's last write (the checker's plainThreads kind, seed
        // 271842565: the first plain write was merged over corelibs' file, which held the removal).
        let since = unsavedWrites
        let newest = taken.merging(since) { _, newer in newer }
        save.newest = suite.corelibs.withLaterPlainWrites(newest)
        if save.newest != newest { save.keepsLaterPlainWrites = true }
        try suite.commit(&save)
        // This save's writes are the file's (a key written again since stays recorded, by that write).
        committed = suite.corelibs.writes.marks(save.writes.keys.filter { since.index(forKey: $0) == nil })
        noteSaveCommitted()
      }
      // Finish, writes running again.
      try suite.flushKeptFile(&save)
      // A stale copy of corelibs' is dropped only when that cannot make it save anything: nothing unsaved, no other
      // save waiting with keys in its dirty list, and no write of ours meanwhile (a plain `UserDefaults` write of
      // this process can still land: the file is journaled while corelibs saves it).
      let copyDropped: Bool? =
        save.copyIsStale
        ? withoutWrites(hooks) {
          // Not dropped when the journal cannot be written: memory then counts as untrusted, reloaded later.
          state.withLock { $0.sync.aloneWithNothingUnsaved } && (try? suite.dropCorelibsCopy()) == true
        }
        : nil
      let outcome = suite.finishSave(save, copyDropped: copyDropped)
      end(&turn)
      return outcome
    }
    // The rename (or unlink) is made durable after the lock is released: the next process waiting for the lock (a
    // reload of this very save, in a process that watches the suite) need not wait for the disk as well.
    try suite.file.flushFolder(of: suite.file.path)
    return outcome
  }
}
