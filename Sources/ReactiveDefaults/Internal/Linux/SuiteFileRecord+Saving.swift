import Foundation
import Synchronization

/// The save of a suite's file (Linux), as SuiteFileRecord.swift's header describes it: the journal, corelibs' save,
/// the commit (keeping corelibs' file, or renaming the journal over it), with writes of ours held off from corelibs'
/// save to the commit; and the test hooks that act inside it.
extension SuiteFileRecord {
  /// Saves the writes `takingWrites` takes off the pending list once the suite's lock is held (the values the
  /// library's writes stored in `defaults`, corelibs' memory; nil: removed) into the suite's file, as described
  /// above. Throws without touching the plist when the save cannot be done whole.
  ///
  /// `whenAlone` runs its body when nothing of ours is unsaved and no write is in progress: the save drops corelibs'
  /// copy through it (which then cannot make it save anything) when the file it leaves is not corelibs' own content.
  ///
  /// `excludingWrites` runs its body while no write of ours is in progress (``WriteGate/excludingWrites(_:)``).
  ///
  /// `writtenSince` gives the writes made since the writes were taken (the newest value of each key): they replace
  /// this save's writes of the same keys, since corelibs may not hold them (it keeps no record of a removal of a key
  /// its copy lacked, nor of a write of the value its copy held, so its save can bring back the file's older value).
  func save(
    takingWrites: () -> [PropertyListKey: PropertyListValue?],
    writtenSince: @escaping () -> [PropertyListKey: PropertyListValue?],
    excludingWrites: (() throws(SaveFailure) -> Void) throws(SaveFailure) -> Void,
    whenAlone: (() -> Bool) -> Bool,
    committed: () -> Void
  ) throws(SaveFailure) -> SaveOutcome {
    let defaults = self.defaults.instance
    let outcome = try locked { () throws(SaveFailure) -> SaveOutcome in
      let writes = takingWrites()
      let (check, stamp) = try checkThenStamp()
      // What the journal holds.
      var entries: [PropertyListKey: PropertyListValue]?
      // What the save did, for ``SuiteFile/saveTrace`` (described only when something traces).
      var source = "disk"
      var corelibsResult: String?
      defer {
        if let trace = SuiteFile.saveTrace.withLock({ $0 }) {
          let after = (try? file.read())??.entries.map { "\($0.key.string)=\($0.value)" }.sorted() ?? []
          trace(
            "save of \(file.fileName) from \(source), \(corelibsResult ?? "not saved"), thread "
              + "\(currentThreadID() % 100_000), written since \(writtenSince().keys.map(\.string).sorted()), writes "
              + "\(writes.map { "\($0.key.string)=\(String(describing: $0.value))" }.sorted()), changedElsewhere "
              + "\(check.changedElsewhere), file after: \(after)")
        }
      }
      if !check.changedElsewhere, stamp != nil, var known = knownEntries(at: stamp) {
        source = "known"
        // The file is as this process last saved or parsed it: the writes applied to it.
        for (key, value) in writes { known[key] = value }
        entries = known
      } else if !check.changedElsewhere && stamp != nil {
        // The file is as this process last saved or loaded it, so corelibs' memory is that file plus the unsaved
        // writes, with no need to parse the file again: the merged domain as it stands, with the writes applied over
        // it all the same. corelibs keeps no record of a removal of a key its copy did not hold, nor of a write of
        // the value its copy held: a copy loaded again since (a reload that found writes of ours pending saves
        // them) can hold the key the write removed. (Keys written again since the writes were taken get their newer
        // values.)
        var domain = try corelibs.entries(of: defaults)
        for (key, value) in writes.merging(writtenSince(), uniquingKeysWith: { _, newer in newer }) {
          domain[key] = value
        }
        entries = domain
        source = "corelibs"
      } else {
        var onDisk = try entriesOnDisk(check)
        for (key, value) in writes { onDisk[key] = value }
        entries = onDisk
      }
      // What this save means the file to hold.
      let journalEntries = entries ?? [:]
      let bytes = SuiteFile.encode(journalEntries)
      try Self.checkSize(bytes)
      let journal = file.journalPath
      try file.writeNewFile(journal, bytes)
      // corelibs' file can hold more than the journal: writes made with plain `UserDefaults` in this process, or
      // writes of ours that raced with this save. When corelibs' save failed (its in-place write may have stopped
      // halfway), or its file is unreadable, the journal replaces it.
      TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeCorelibsSave)
      // From corelibs' save to the commit, no write of ours runs: corelibs forgets a key is unsaved once it has
      // written it, so a write in between, saved in place by a plain `synchronize()` on another thread (any suite's:
      // corelibs then saves every domain), would be in corelibs' copy as saved, and in no file once the journal is
      // renamed over corelibs' file; corelibs would drop that copy at the next save, and reads load the file.
      var corelibsSaved = false
      // The stamp of what this save leaves: the journal's, taken before its rename (which keeps it), so that a writer
      // taking no lock that replaces the file right after is a change, never mistaken for this save.
      var savedStamp: SuiteFile.Stamp?
      var copyIsStale = false
      var removedElsewhere = false
      /// corelibs' file, when the save keeps it, and whether that is the journal's content.
      var keptCorelibsFile: Data?
      var keptJournalContent = false
      // Every write of ours up to corelibs' save (set once no write runs).
      var newest: [PropertyListKey: PropertyListValue?] = [:]
      /// The file the save leaves differs from the journal in a key no write of ours explains: corelibs' save merged a
      /// change another writer made during this save (a plain `rm` after the check: corelibs saved its dirty keys into
      /// the missing file), or a plain `UserDefaults` write of this process. Either way reads give it, and observers
      /// must hear of it, not only reads.
      var foreignChange = false
      func differsFromJournal(_ domain: [PropertyListKey: PropertyListValue]?) -> Bool {
        guard let domain else { return true }
        for (key, value) in domain where newest.index(forKey: key) == nil && journalEntries[key] != value {
          return true
        }
        return journalEntries.keys.contains { newest.index(forKey: $0) == nil && domain[$0] == nil }
      }
      try excludingWrites { () throws(SaveFailure) in
        let beforeCorelibsSave = file.stamp()
        corelibsSaved = corelibs.synchronize()
        // corelibs marks the merged views (what `object(forKey:)` reads) stale before it takes the domain's lock to
        // save: a view rebuilt on another thread in between is built from the copy before the save, and outlives it.
        // That copy is the file it was loaded from plus writes of ours; when the file corelibs' save reloaded is
        // another (another process changed it, or removed it during this save), such a view holds older values, so
        // corelibs marks them stale once more (with nothing left unsaved it only drops the copy, which this save
        // loads again at its end). Its result is the save's: if it had plain writes to save and failed, the journal
        // replaces the file (those writes stay in corelibs' unsaved list).
        if corelibsSaved && (check.changedElsewhere || beforeCorelibsSave != stamp) {
          corelibsSaved = corelibs.synchronize()
        }
        TrackedFile.saveSteps.withLock { $0[file.path] }?(.afterCorelibsSave)
        var afterCorelibsSave = file.stamp()
        var saved = corelibsSaved ? file.contentsAfterSave(file.path, expected: bytes) : .unreadable
        TrackedFile.saveSteps.withLock { $0[file.path] }?(.afterReadBack)
        if SuiteFile.saveTrace.withLock({ $0 != nil }) { corelibsResult = "corelibs saved \(corelibsSaved), \(saved)" }
        /// corelibs saved, but its file cannot be read back (a writer that takes no lock is rewriting it, or it grew
        /// past the size limit): the journal takes corelibs' memory, which also holds writes made with plain
        /// `UserDefaults` in this process (its list of them was just emptied), when that fits the limit.
        func commitMemory() throws(SaveFailure) {
          if let memory = try? corelibs.entries(of: defaults) {
            let replacement = SuiteFile.encode(memory)
            if replacement.count <= SuiteFile.maximumSize,
              (try? file.replaceAtomically(journal, with: replacement)) != nil
            {
              entries = memory
              foreignChange = differsFromJournal(memory)
            }
          }
          try commitJournal()
        }
        /// The commit point: the journal, stamped, renamed over the plist.
        func commitJournal() throws(SaveFailure) {
          TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeRename)
          savedStamp = file.stamp(of: journal)
          try file.move(journal, over: file.path, flushing: false)
        }
        // corelibs' file holds every write of this save and more: writes of ours made since the writes were taken
        // (the usual difference), or plain `UserDefaults` writes of this process. It stays, and the journal goes:
        // with no rename ahead, nothing a write does once writes run again can be lost. It is stamped to the
        // nanosecond first, as a journal is (if it is still the file read back): corelibs' in-place write has the
        // file system's coarse time, so another process's next in-place save, of the same size, in the same tick,
        // would read as this one.
        var restamped: SuiteFile.Stamp?
        // Every write of ours up to now: this save's, and the newer ones made since it took them (no write runs now).
        newest = writes.merging(writtenSince(), uniquingKeysWith: { _, newer in newer })
        // The same holds when corelibs' file is the journal's content (`.same`): no rename. A plain `synchronize()`
        // on another thread (any suite's: corelibs then saves every domain) can rewrite the file in place after the
        // read-back, with plain writes of this process that corelibs then counts as saved; a rename would drop them
        // from the file, and a later reload from reads (found under the thread sanitizer: a plain write of 4 read
        // back as 2). So a file that changed since the read-back is read back again: corelibs wrote its copy, which
        // holds ours. (One that cannot be restamped, or keeps changing, goes the rename way.)
        for _ in 0..<3 {
          let holds: Bool
          switch saved {
          case .same: holds = true
          case .different: holds = corelibsHolds(newest)
          case .absent, .unreadable: holds = false
          }
          guard holds, let readBack = afterCorelibsSave else { break }
          restamped = (try? file.restamp(file.path, expected: readBack)) ?? nil
          guard restamped == nil, file.stamp() != readBack else { break }
          afterCorelibsSave = file.stamp()
          saved = file.contentsAfterSave(file.path, expected: bytes)
        }
        switch saved {
        case .same where restamped != nil:
          // The journal's content, kept in corelibs' file: `entries` stay what the journal holds.
          keptCorelibsFile = bytes
          keptJournalContent = true
          savedStamp = restamped
        case .different(let written) where restamped != nil:
          keptCorelibsFile = written
          savedStamp = restamped
          entries = nil
        case .different(let written):
          // The journal takes corelibs' content (atomically), then is renamed over the plist: one commit point, so
          // a crash never leaves a journal older than the plist. corelibs' content, with this save's writes applied
          // over it (the newer value, for a key written again since): corelibs saves only the keys its dirty list
          // names, and a removal of a key its (older) copy did not hold is not on that list, so its file may lack a
          // write of ours that the journal has.
          guard var merged = try? SuiteFile.parseDomain(written) else {
            try commitMemory()
            break
          }
          foreignChange = differsFromJournal(merged)
          for (key, value) in newest { merged[key] = value }
          let content = SuiteFile.encode(merged)
          // The file then holds what corelibs' copy lacks: the copy must go.
          if content != written { copyIsStale = true }
          do {
            try file.replaceAtomically(journal, with: content)
            try commitJournal()
          } catch {
            // No room for another copy: corelibs' file, which was just read back whole, stays; the journal, which
            // lacks what corelibs holds beyond it, goes.
            file.remove(journal)
            savedStamp = file.stamp()
          }
          // corelibs' content, not parsed here: the next save copies corelibs' domain, or parses the file.
          entries = nil
        case .absent:
          // corelibs removed the file of a domain it holds empty, or another process removed it after the check (then
          // corelibs, with nothing of ours unsaved, only dropped its copy): either way memory is loaded as no file
          // now, and the observers of the keys the journal held must hear of it.
          file.remove(journal)
          if entries?.isEmpty == false { removedElsewhere = true }
          entries = nil
        case .unreadable where corelibsSaved:
          try commitMemory()
        case .same, .unreadable:
          try commitJournal()
        }
      }
      if let kept = keptCorelibsFile {
        // Flushed before the journal goes: until then a crash finds the journal, and completes it at the next open.
        // (If it cannot be flushed, the journal goes all the same: it lacks what corelibs saved beyond it, which
        // corelibs no longer counts as unsaved.)
        defer { file.remove(journal) }
        TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeFlush)
        if try file.flush(file.path) {
          // Parsed now, while writes run: the next save applies its writes to these entries instead of copying
          // corelibs' whole domain under corelibs' lock, which the suite's writers wait for.
          if !keptJournalContent {
            entries = try? SuiteFile.parseDomain(kept)
            foreignChange = differsFromJournal(entries)
          }
        } else {
          // A writer that takes no lock (a plain `rm`) removed the file since the restamp: the save happened, then
          // the removal, which memory and the observers now follow, as when corelibs' save found the file gone (not
          // a failed save).
          savedStamp = nil
          entries = nil
          removedElsewhere = true
        }
      }
      // corelibs dropped its copy when it had nothing to save: it loads the file now, under the lock.
      // (Not ``CorelibsDomain/reloadCopy()``: a write of ours may run meanwhile, and its synchronize would then rewrite
      // the file in place with no journal behind it; `dropCopy` drops only when that cannot happen.)
      if copyIsStale && !whenAlone(corelibs.dropCopy) {
        corelibs.load()
        corelibs.record(.untrusted)
        committed()
        return SaveOutcome(issue: check.issue, changedElsewhere: true)
      }
      corelibs.load()
      if corelibsSaved || !check.changedElsewhere {
        markSynced(at: savedStamp, entries: entries)
      } else {
        // corelibs kept its copy, which lacks the other process's changes: the next edit or reload must not trust it.
        corelibs.record(.untrusted)
      }
      // A copy dropped for the merged file changed what reads give (a removal corelibs had not recorded, now in the
      // file): its observers must hear of it, as of another process's change, or they keep the copy's value until
      // the next change of the key.
      committed()
      return SaveOutcome(
        issue: check.issue,
        changedElsewhere: check.changedElsewhere || removedElsewhere || copyIsStale || foreignChange)
    }
    // The rename (or unlink) is made durable after the lock is released: the next process waiting for the lock
    // (a reload of this very save, in a process that watches the suite) need not wait for the disk as well.
    try file.flushFolder(of: file.path)
    return outcome
  }

  /// Whether corelibs' copy holds each of `writes` (nil: removed): once it has saved, its file is that copy. Asked
  /// while no write of ours runs, so the copy is as corelibs saved it.
  private func corelibsHolds(_ writes: [PropertyListKey: PropertyListValue?]) -> Bool {
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
