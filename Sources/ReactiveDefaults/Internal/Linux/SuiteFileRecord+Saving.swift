import Foundation
import Synchronization

/// The steps of a suite's save, as SuiteFileRecord.swift's header describes it: the journal, corelibs' save, the
/// commit (keeping corelibs' file, or renaming the journal over it), and the finish. Each step takes the
/// ``SuiteSave`` the earlier ones filled in; ``SuitePersistence`` runs them in order, holding the suite's lock, and
/// holds writes of ours off from corelibs' save to the commit (SuitePersistence+SuiteSave.swift). No step calls back.
extension SuiteFileRecord {
  // MARK: Prepare (suite lock)

  /// The check, and the stamp the save works from, once the suite's lock is held and `writes` were taken.
  func beginSave(writes: SuiteSave.Writes) throws(SaveFailure) -> SuiteSave {
    let (check, stamp) = try checkThenStamp()
    return SuiteSave(writes: writes, check: check, stamp: stamp)
  }

  /// The entries the journal will hold: the file's, with the writes applied.
  func gatherEntries(_ save: inout SuiteSave) throws(SaveFailure) {
    if !save.check.changedElsewhere, save.stamp != nil, var known = knownEntries(at: save.stamp) {
      // The file is as this process last saved or parsed it: the writes applied to it.
      save.source = .known
      for (key, value) in save.writes { known[key] = value }
      save.journal = known
    } else if !save.check.changedElsewhere && save.stamp != nil {
      // The file is as this process last saved or loaded it, so corelibs' memory is that file plus the unsaved
      // writes, with no need to parse the file again: the merged domain as it stands, with the writes applied over
      // it all the same. corelibs keeps no record of a removal of a key its copy did not hold, nor of a write of
      // the value its copy held: a copy loaded again since (a reload that found writes of ours pending saves
      // them) can hold the key the write removed. (Keys written again since the writes were taken get their newer
      // values: ``SuiteSave/applyWritesMadeSince(_:)``, next.)
      var domain = try corelibs.entries(of: defaults.instance)
      for (key, value) in save.writes { domain[key] = value }
      save.journal = domain
      save.source = .corelibs
    } else {
      var onDisk = try entriesOnDisk(save.check)
      for (key, value) in save.writes { onDisk[key] = value }
      save.journal = onDisk
    }
  }

  /// The journal written and flushed: what this save means the file to hold.
  func writeJournal(_ save: inout SuiteSave) throws(SaveFailure) {
    save.journalBytes = SuiteFile.encode(save.journal)
    try Self.checkSize(save.journalBytes)
    try file.writeNewFile(file.journalPath, save.journalBytes)
    // Before writes are held off: a test writes to the store from here, on the saving thread.
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeCorelibsSave)
  }

  // MARK: corelibs' save and the commit (suite lock, no write of ours running)

  /// corelibs' save, and its file read back. corelibs' file can hold more than the journal: writes made with plain
  /// `UserDefaults` in this process, or writes of ours that raced with this save. When corelibs' save failed (its
  /// in-place write may have stopped halfway), or its file is unreadable, the journal replaces it.
  func saveWithCorelibs(_ save: inout SuiteSave) {
    let beforeCorelibsSave = file.stamp()
    var saved = synchronizeCorelibs()
    // corelibs marks the merged views (what `object(forKey:)` reads) stale before it takes the domain's lock to
    // save: a view rebuilt on another thread in between is built from the copy before the save, and outlives it.
    // That copy is the file it was loaded from plus writes of ours; when the file corelibs' save reloaded is
    // another (another process changed it, or removed it during this save), such a view holds older values, so
    // corelibs marks them stale once more (with nothing left unsaved it only drops the copy, which this save
    // loads again at its end). Its result is the save's: if it had plain writes to save and failed, the journal
    // replaces the file (those writes stay in corelibs' unsaved list).
    if SuiteSave.synchronizesAgain(
      corelibsSaved: saved, changedElsewhere: save.check.changedElsewhere, stampBeforeSave: beforeCorelibsSave,
      stamp: save.stamp)
    {
      saved = synchronizeCorelibs()
    }
    save.corelibsSaved = saved
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.afterCorelibsSave)
    save.readBackStamp = file.stamp()
    save.readBack = saved ? file.contentsAfterSave(file.path, expected: save.journalBytes) : .unreadable
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.afterReadBack)
    if SuiteFile.saveTrace.withLock({ $0 != nil }) { save.corelibsResult = "corelibs saved \(saved), \(save.readBack)" }
  }

  /// Keeps corelibs' file or commits the journal, once `save.newest` is set.
  ///
  /// corelibs' file holds every write of this save and more: writes of ours made since the writes were taken (the
  /// usual difference), or plain `UserDefaults` writes of this process. It stays, and the journal goes: with no
  /// rename ahead, nothing a write does once writes run again can be lost. It is stamped to the nanosecond first, as
  /// a journal is (if it is still the file read back): corelibs' in-place write has the file system's coarse time, so
  /// another process's next in-place save, of the same size, in the same tick, would read as this one. The same holds
  /// when corelibs' file is the journal's content (`.same`): no rename. A plain `synchronize()` on another thread
  /// (any suite's: corelibs then saves every domain) can rewrite the file in place after the read-back, with plain
  /// writes of this process that corelibs then counts as saved; a rename would drop them from the file, and a later
  /// reload from reads (found under the thread sanitizer: a plain write of 4 read back as 2). So a file that changed
  /// since the read-back is read back again: corelibs wrote its copy, which holds ours. (One that cannot be
  /// restamped, or keeps changing, goes the rename way.)
  func commit(_ save: inout SuiteSave) throws(SaveFailure) {
    var attempts = SuiteSave.KeepAttempts(readBack: save.readBack, stamp: save.readBackStamp)
    var step = attempts.start()
    while true {
      switch step {
      case .askWhetherCorelibsHoldsNewest:
        step = attempts.corelibsHoldsNewest(corelibsHolds(save.newest))
      case .restamp(let expected):
        if let restamped = (try? file.restamp(file.path, expected: expected)) ?? nil {
          step = attempts.restamped(restamped)
        } else {
          step = attempts.restampFailed(stampNow: file.stamp())
        }
      case .readAgain:
        let stamp = file.stamp()
        step = attempts.readAgain(file.contentsAfterSave(file.path, expected: save.journalBytes), stamp: stamp)
      case .decide(let readBack, let restamped):
        save.readBack = readBack
        let decision = SuiteSave.decide(
          corelibsSaved: save.corelibsSaved, readBack: readBack, restamped: restamped, journal: save.journal,
          newest: save.newest)
        try perform(decision, &save)
        return
      }
    }
  }

  private func perform(_ decision: SuiteSave.Decision, _ save: inout SuiteSave) throws(SaveFailure) {
    let journal = file.journalPath
    switch decision {
    case .keep(let kept, let stamp):
      save.left = .kept(kept, stamp: stamp)
    case .merge(let merge):
      // The journal takes corelibs' content (atomically), then is renamed over the plist: one commit point, so a
      // crash never leaves a journal older than the plist. corelibs' content, with this save's writes applied over
      // it (the newer value, for a key written again since): corelibs saves only the keys its dirty list names, and
      // a removal of a key its (older) copy did not hold is not on that list, so its file may lack a write of ours
      // that the journal has. The file then holds what corelibs' copy lacks: the copy must go.
      save.foreignChange = merge.foreignChange
      save.copyIsStale = merge.copyIsStale
      do throws(SaveFailure) {
        try file.replaceAtomically(journal, with: merge.content)
        save.left = .file(stamp: try renameJournal(), entries: nil)
      } catch {
        // No room for another copy: corelibs' file, which was just read back whole, stays; the journal, which lacks
        // what corelibs holds beyond it, goes.
        file.remove(journal)
        save.left = .file(stamp: file.stamp(), entries: nil)
      }
    case .renameWithMemory:
      // corelibs saved, but its file cannot be read back (a writer that takes no lock is rewriting it, or it grew
      // past the size limit): the journal takes corelibs' memory, which also holds writes made with plain
      // `UserDefaults` in this process (its list of them was just emptied), when that fits the limit.
      var entries = save.journal
      if let memory = try? corelibs.entries(of: defaults.instance) {
        let replacement = SuiteFile.encode(memory)
        if replacement.count <= SuiteFile.maximumSize,
          (try? file.replaceAtomically(journal, with: replacement)) != nil
        {
          entries = memory
          save.foreignChange = SuiteSave.differsFromJournal(memory, journal: save.journal, newest: save.newest)
        }
      }
      save.left = .file(stamp: try renameJournal(), entries: entries)
    case .renameJournal:
      save.left = .file(stamp: try renameJournal(), entries: save.journal)
    case .absent(let removedElsewhere):
      // corelibs removed the file of a domain it holds empty, or another process removed it after the check (then
      // corelibs, with nothing of ours unsaved, only dropped its copy): either way memory is loaded as no file now,
      // and the observers of the keys the journal held must hear of it.
      file.remove(journal)
      save.removedElsewhere = removedElsewhere
      save.left = .noFile
    }
  }

  /// The commit point: the journal renamed over the plist. Its stamp is taken before the rename (which keeps it), so
  /// that a writer taking no lock that replaces the file right after is a change, never mistaken for this save.
  private func renameJournal() throws(SaveFailure) -> SuiteFile.Stamp? {
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeRename)
    // A FIFO, socket or device put there during the save is not replaced.
    try refuseSpecialFile()
    let stamp = file.stamp(of: file.journalPath)
    try file.move(file.journalPath, over: file.path, flushing: false)
    return stamp
  }

  // MARK: Finish (suite lock, writes running again)

  /// A kept corelibs' file flushed before the journal goes: until then a crash finds the journal, and completes it at
  /// the next open. (If it cannot be flushed, the journal goes all the same: it lacks what corelibs saved beyond it,
  /// which corelibs no longer counts as unsaved.)
  func flushKeptFile(_ save: inout SuiteSave) throws(SaveFailure) {
    guard case .kept = save.left else { return }
    defer { file.remove(file.journalPath) }
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeFlush)
    save.keptFileFlushed(try file.flush(file.path))
  }

  /// corelibs loads the file now, under the lock (it dropped its copy when it had nothing to save, or was told to:
  /// `copyDropped`), and what its copy is gets recorded. (Not ``CorelibsDomain/reloadCopy(file:)``: a write of ours may
  /// run meanwhile, and its synchronize would then rewrite the file in place with no journal behind it; the drop
  /// happens only when that cannot happen.)
  ///
  /// A drop of a stale copy saves in place the plain `UserDefaults` writes of this process the copy held (one can
  /// land at any moment): the file is then no longer the one the save left, and the copy is recorded as the file
  /// the drop left, stamped before the load. (Recorded as the committed file, the copy counted as not the file, and
  /// an edit whose first step was this save found it so after its reload, and failed: the checker's updateMix kind.)
  func finishSave(_ save: SuiteSave, copyDropped: Bool?) -> SaveOutcome {
    let stampAfterDrop = copyDropped == true ? file.stamp() : nil
    corelibs.load()
    switch save.memoryAfterSave(copyDropped: copyDropped) {
    case .synced(let stamp, _) where copyDropped == true && stampAfterDrop != stamp:
      markSynced(at: stampAfterDrop)
      noteLoaded(at: stampAfterDrop)
    case .synced(let stamp, let entries): markSynced(at: stamp, entries: entries)
    case .untrusted: corelibs.record(.untrusted)
    }
    return save.outcome
  }

  /// The line ``SuiteFile/saveTrace`` gets for `save`, once it ended or failed.
  func traceLine(_ save: SuiteSave, writtenSince: SuiteSave.Writes) -> String {
    let after = (try? file.read())??.entries.map { "\($0.key.string)=\($0.value)" }.sorted() ?? []
    return "save of \(file.fileName) from \(save.source.rawValue), \(save.corelibsResult ?? "not saved"), thread "
      + "\(currentThreadID() % 100_000), written since \(writtenSince.keys.map(\.string).sorted()), writes "
      + "\(save.writes.map { "\($0.key.string)=\(String(describing: $0.value))" }.sorted()), changedElsewhere "
      + "\(save.check.changedElsewhere), file after: \(after)"
  }

  /// Whether corelibs' copy holds each of `writes` (nil: removed): once it has saved, its file is that copy. Asked
  /// while no write of ours runs, so the copy is as corelibs saved it.
  private func corelibsHolds(_ writes: SuiteSave.Writes) -> Bool {
    writes.allSatisfy { key, value in
      let held = corelibs.value(forKey: key.string)
      guard let value else { return held == nil }
      switch (held, value) {
      case (let data as NSData, .data(let expected)):
        // Copied whole: bridging corelibs' own data to `Data` goes byte by byte.
        return data.length == expected.count && Data(bytes: data.bytes, count: data.length) == expected
      case (let held?, _): return PropertyListValue(foundationObject: held) == value
      case (nil, _): return false
      }
    }
  }
}
