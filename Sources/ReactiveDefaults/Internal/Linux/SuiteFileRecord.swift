import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One suite's file as this process handles it (Linux): the checks, the atomic saves, the reloads, and the
/// problems found, reported to every store of the suite.
///
/// A save never leaves the file to corelibs alone. corelibs rewrites a plist in place (`O_TRUNC`, then `write`), so
/// a crash in the middle leaves it empty or cut; and its in-memory domain stays "dirty" (each new key costs a scan
/// of all unsaved ones) until one of its own saves succeeds. So a save, under the suite's lock:
/// 1. applies this process's unsaved writes to the file's entries as this process last saved or parsed them (reading
///    the file with the strict reader when another process changed it);
/// 2. writes the result to `<suite>.plist.journal` and flushes it to disk;
/// 3. lets corelibs save this one domain (`CFPreferencesSynchronize`), which empties its dirty list by rewriting
///    the plist in place; a crash now finds the journal, whole, at the next open;
/// 4. renames the journal over the plist and flushes the folder; when corelibs' file holds more than the journal
///    (writes of ours made during the save, plain `UserDefaults` writes of this process), it keeps that file,
///    flushed, and removes the journal, or, when corelibs' file lacks a write of the save, replaces it with the two
///    merged, atomically.
/// No write of ours runs from step 3 to the end of step 4 (``save(_:takingWrites:writtenSince:excludingWrites:dropCopy:)``).
/// Each open of the suite first completes a journal left by a crash.
final class SuiteFileRecord: Sendable {
  let file: SuiteFile
  /// corelibs' copy of the suite, and what it is.
  let corelibs: CorelibsDomain

  private struct State {
    /// The file's stamp when last checked for problems: the same file is not checked (or reported) twice.
    var checked: SuiteFile.Stamp?
    /// What was found so far, replayed to each store that sets an issue handler.
    var found: [DefaultsError] = []
    /// The keys and values of the file as this process last saved or parsed it, and the file's stamp then: a save
    /// of a file unchanged since applies its writes to these instead of copying corelibs' whole domain (bridging
    /// every value, under corelibs' lock, which the writers of the suite wait for).
    var known: (stamp: SuiteFile.Stamp, entries: [PropertyListKey: PropertyListValue])?

    /// The file's entries as last known, if the file is still as it was then.
    func entries(at stamp: SuiteFile.Stamp?) -> [PropertyListKey: PropertyListValue]? {
      guard let known, known.stamp == stamp else { return nil }
      return known.entries
    }
  }

  private let state = Locked(State())
  /// The thread holding the suite's lock through this record (0: none), so that a thread already holding it (an
  /// ``DefaultsStore/edit(_:)`` whose body calls ``DefaultsStore/flush()``) runs on instead of waiting for itself:
  /// `flock` locks an open file, so a second `open` of the lock file in the same process would wait forever.
  private let lockOwner = Atomic<UInt>(0)
  /// The size of the file after the last save or reload.
  let savedFileSize = Atomic<Int>(0)

  init(file: SuiteFile, corelibs: CorelibsDomain) {
    self.file = file
    self.corelibs = corelibs
  }

  /// What checking the file found.
  struct Check {
    var issue: DefaultsError?
    /// The domain the check read, when it read one (a save merges into it instead of reading the file again).
    var domain: SuiteFile.Domain?
    /// The file is not as this process last saved or loaded it: another process wrote it.
    var changedElsewhere = false
  }

  /// The first look at the file, before corelibs reads it: completes a journal a crash left, checks the file, and
  /// makes corelibs' copy the file (``CorelibsDomain/reloadCopy()``: corelibs may hold an older copy from an earlier
  /// store of the suite, or from a plain `UserDefaults`), holding the suite's lock. An XML file whose frame is whole
  /// is not parsed here (``SuiteFile/glance()``): parsing 10,000 keys cost more than opening the suite otherwise, and
  /// corelibs, which parses it next, refuses bad XML without harm. If corelibs reloaded its copy and the copy lacks
  /// the key the file names first, corelibs could not parse the file: the full check runs at once, so the file is
  /// reported, and copied before anything could replace it. (When corelibs could not drop its older copy, that copy
  /// proves nothing about the file: the suite is not marked as loaded, so the next reload or edit loads it.)
  ///
  /// With no file (and no journal), nothing is created: corelibs' copy is only dropped, so that it reads as the
  /// missing file does.
  func open() -> DefaultsError? {
    guard file.stamp() != nil || file.journalState() != .absent else {
      // Not re-stamped after the load: a file created meanwhile is an event, and its reload finds memory stale.
      if corelibs.reloadCopy() { corelibs.record(.absent) }
      return nil
    }
    do {
      return try locked { () throws(SaveFailure) -> DefaultsError? in
        try recoverJournal()
        if case .looksWhole(let firstKey)? = try? file.glance() {
          let stamp = file.stamp()
          let fresh = corelibs.reloadCopy()
          if firstKey.map(corelibs.has) ?? true {
            if fresh { markSynced(at: stamp) }
            return nil
          }
        }
        let check = try check()
        let stamp = file.stamp()
        if corelibs.reloadCopy() && check.issue == nil { markSynced(at: stamp, entries: check.domain?.entries) }
        return check.issue
      }
    } catch {
      return file.failure(error)
    }
  }

  /// Runs `body` holding the suite's lock (the `flock` of its lock file), which excludes every other process and
  /// every other thread of this one; a thread that already holds it runs `body` at once.
  func locked<T>(_ body: () throws(SaveFailure) -> T) throws(SaveFailure) -> T {
    let thread = currentThreadID()
    // Only this thread ever stores its own id: seeing it means this thread holds the lock.
    if lockOwner.load(ordering: .acquiring) == thread { return try body() }
    LockOrder.taking(.suiteFile)
    defer { LockOrder.released(.suiteFile) }
    return try file.withLock { () throws(SaveFailure) -> T in
      lockOwner.store(thread, ordering: .releasing)
      defer { lockOwner.store(0, ordering: .releasing) }
      return try body()
    }
  }

  /// Completes a save that a crash interrupted: a whole journal is the newest version of the file. Call it holding
  /// the suite's lock; the plist's stamp then changes, so memory no longer counts as the file.
  func recoverJournal() throws(SaveFailure) {
    switch file.journalState() {
    case .absent: break
    case .whole: try file.move(file.journalPath, over: file.path)
    // Cut short before it was complete: the plist was not touched yet.
    case .partial: file.remove(file.journalPath)
    }
  }

  /// Checks the file if it changed since the last check. An unreadable one is reported and kept: copied beside
  /// the plist, or moved there when corelibs could crash or hang reading it. Call it holding the file's lock;
  /// announce the problem once the lock is released.
  func check() throws(SaveFailure) -> Check {
    try recoverJournal()
    let stamp = file.stamp()
    let checked = state.withLock { $0.checked }
    var result = Check(changedElsewhere: !corelibs.isFile(stamp))
    guard stamp != checked else { return result }
    do throws(SuiteFileProblem) {
      result.domain = try file.settledRead()
      // Known only if no writer that takes no lock changed the file while it was read.
      if let domain = result.domain, let stamp, file.stamp() == stamp {
        state.withLock { $0.known = (stamp, domain.entries) }
      }
    } catch {
      let backup: String?
      if case .notAFile(let kind) = error, kind != SuiteFileProblem.folder {
        // A FIFO, socket or device holds no settings, and corelibs would block forever opening it: moved away.
        backup = file.moveAside()
      } else if error.isLeftAlone || error == .empty {
        backup = nil
      } else if error.endangersReaders {
        backup = file.moveAside()
      } else {
        backup = file.keepCopy()
      }
      result.issue = .unreadableFile(path: file.path, reason: error.reason, backup: backup)
    }
    let checkedStamp = file.stamp()  // after any wait for a writer to finish, or a move
    state.withLock { state in
      state.checked = checkedStamp
      if let issue = result.issue { state.found = Array((state.found + [issue]).suffix(16)) }
    }
    return result
  }

  /// What a save did besides saving.
  struct SaveOutcome {
    var issue: DefaultsError?
    /// The save merged another process's changes: observers must hear of them.
    var changedElsewhere = false
  }

  /// Saves the writes `takingWrites` takes off the pending list once the suite's lock is held (the values the
  /// library's writes stored in `defaults`, corelibs' memory; nil: removed) into the suite's file, as described
  /// above. Throws without touching the plist when the save cannot be done whole.
  ///
  /// `dropCopy` drops corelibs' copy when that cannot make it save anything (nothing of ours unsaved, no write in
  /// progress): the save calls it when the file it leaves is not corelibs' own content.
  ///
  /// `excludingWrites` runs its body while no write of ours is in progress (``WriteGate/excludingWrites(_:)``).
  ///
  /// `writtenSince` names the keys written again since the writes were taken: corelibs' content holds their newer
  /// values, which this save's must not replace.
  func save(
    _ defaults: UserDefaults, takingWrites: () -> [PropertyListKey: PropertyListValue?],
    writtenSince: @escaping () -> Set<PropertyListKey>,
    excludingWrites: (() throws(SaveFailure) -> Void) throws(SaveFailure) -> Void,
    dropCopy: () -> Bool
  ) throws(SaveFailure) -> SaveOutcome {
    let outcome = try locked { () throws(SaveFailure) -> SaveOutcome in
      let writes = takingWrites()
      let check = try check()
      let stamp = file.stamp()
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
              + "\(currentThreadID() % 100_000), written since \(writtenSince().map(\.string).sorted()), writes "
              + "\(writes.map { "\($0.key.string)=\(String(describing: $0.value))" }.sorted()), changedElsewhere "
              + "\(check.changedElsewhere), file after: \(after)")
        }
      }
      if !check.changedElsewhere, stamp != nil, var known = state.withLock({ $0.entries(at: stamp) }) {
        source = "known"
        // The file is as this process last saved or parsed it: the writes applied to it.
        for (key, value) in writes { known[key] = value }
        entries = known
      } else if !check.changedElsewhere && stamp != nil {
        // The file is as this process last saved or loaded it, so corelibs' memory is that file plus the unsaved
        // writes, with no need to parse the file again: the merged domain as it stands, with the writes applied over
        // it all the same. corelibs keeps no record of a removal of a key its copy did not hold, nor of a write of
        // the value its copy held: a copy loaded again since (a reload that found writes of ours pending saves
        // them) can hold the key the write removed. (Not over keys written again since the writes were taken:
        // corelibs holds their newer values.)
        var domain = try corelibs.entries(of: defaults)
        let newer = writtenSince()
        for (key, value) in writes where !newer.contains(key) { domain[key] = value }
        entries = domain
        source = "corelibs"
      } else {
        var onDisk = try entriesOnDisk(check)
        for (key, value) in writes { onDisk[key] = value }
        entries = onDisk
      }
      let bytes = SuiteFile.encode(entries ?? [:])
      try Self.checkSize(bytes)
      let journal = file.journalPath
      try file.writeNewFile(journal, bytes)
      // corelibs' file can hold more than the journal: writes made with plain `UserDefaults` in this process, or
      // writes of ours that raced with this save. When corelibs' save failed (its in-place write may have stopped
      // halfway), or its file is unreadable, the journal replaces it.
      SuiteFileRecord.saveSteps.withLock { $0[file.path] }?(.beforeCorelibsSave)
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
      /// corelibs' file, when the save keeps it.
      var keptCorelibsFile: Data?
      try excludingWrites { () throws(SaveFailure) in
        corelibsSaved = corelibs.synchronize()
        SuiteFileRecord.saveSteps.withLock { $0[file.path] }?(.afterCorelibsSave)
        let afterCorelibsSave = file.stamp()
        let saved = corelibsSaved ? file.contentsAfterSave(file.path, expected: bytes) : .unreadable
        // The file read back is the one corelibs wrote (no writer that takes no lock replaced it meanwhile).
        let unchangedSinceSave = afterCorelibsSave != nil && file.stamp() == afterCorelibsSave
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
            }
          }
          try commitJournal()
        }
        /// The commit point: the journal, stamped, renamed over the plist.
        func commitJournal() throws(SaveFailure) {
          SuiteFileRecord.saveSteps.withLock { $0[file.path] }?(.beforeRename)
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
        if case .different = saved, unchangedSinceSave, let written = afterCorelibsSave,
          corelibsHolds(writes, except: writtenSince())
        {
          restamped = (try? file.restamp(file.path, expected: written)) ?? nil
        }
        switch saved {
        case .different(let written) where restamped != nil:
          keptCorelibsFile = written
          savedStamp = restamped
          entries = nil
        case .different(let written):
          // The journal takes corelibs' content (atomically), then is renamed over the plist: one commit point, so
          // a crash never leaves a journal older than the plist. corelibs' content, with this save's writes applied
          // over it (but not over newer writes of the same keys, made since): corelibs saves only the keys its dirty
          // list names, and a removal of a key its (older) copy did not hold is not on that list, so its file may lack
          // a write of ours that the journal has.
          guard var merged = try? SuiteFile.parseDomain(written) else {
            try commitMemory()
            break
          }
          let newer = writtenSince()
          for (key, value) in writes where !newer.contains(key) { merged[key] = value }
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
        try file.flush(file.path)
        // Parsed now, while writes run: the next save applies its writes to these entries instead of copying corelibs'
        // whole domain under corelibs' lock, which the suite's writers wait for.
        entries = try? SuiteFile.parseDomain(kept)
      }
      // corelibs dropped its copy when it had nothing to save: it loads the file now, under the lock.
      // (Not ``CorelibsDomain/reloadCopy()``: a write of ours may run meanwhile, and its synchronize would then rewrite
      // the file in place with no journal behind it; `dropCopy` drops only when that cannot happen.)
      if copyIsStale && !dropCopy() {
        corelibs.load()
        corelibs.record(.untrusted)
        return SaveOutcome(issue: check.issue, changedElsewhere: true)
      }
      corelibs.load()
      if corelibsSaved || !check.changedElsewhere {
        markSynced(at: savedStamp, entries: entries)
      } else {
        // corelibs kept its copy, which lacks the other process's changes: the next edit or reload must not trust it.
        corelibs.record(.untrusted)
      }
      return SaveOutcome(issue: check.issue, changedElsewhere: check.changedElsewhere || removedElsewhere)
    }
    // The rename (or unlink) is made durable after the lock is released: the next process waiting for the lock
    // (a reload of this very save, in a process that watches the suite) need not wait for the disk as well.
    try file.flushFolder(of: file.path)
    return outcome
  }

  /// Whether corelibs' copy holds each of `writes` (nil: removed) but those of keys in `newer`: once it has saved, its
  /// file is that copy. Asked while no write of ours runs, so the copy is as corelibs saved it.
  private func corelibsHolds(
    _ writes: [PropertyListKey: PropertyListValue?], except newer: Set<PropertyListKey>
  ) -> Bool {
    writes.allSatisfy { key, value in
      guard !newer.contains(key) else { return true }
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

  /// A moment inside a save that no event marks, for ``saveSteps``.
  enum SaveStep: Sendable {
    /// The journal is written; corelibs has not saved.
    case beforeCorelibsSave
    /// corelibs saved; the journal is not renamed yet (no write of ours can run until it is).
    case afterCorelibsSave
    /// corelibs' file is read back; the journal is about to be renamed over it.
    case beforeRename
  }

  /// Told each step of each save of the suite file at the path it is registered under (tests use it to act at that
  /// moment).
  static let saveSteps = Locked<[String: @Sendable (SaveStep) -> Void]>([:])

  /// The keys and values of the file as it is (call it holding the file's lock, after `check`): an unreadable file
  /// (reported and backed up by the check) is moved out of the way and counts as empty, so that neither this save
  /// nor corelibs' own reads it again.
  func entriesOnDisk(_ check: Check) throws(SaveFailure) -> [PropertyListKey: PropertyListValue] {
    do throws(SuiteFileProblem) {
      if let domain = check.domain { return domain.entries }
      return try file.settledRead()?.entries ?? [:]
    } catch {
      if error.isLeftAlone { throw SaveFailure("\(file.path) \(error.reason)") }
      if file.stamp() != nil && error != .empty && file.moveAside() == nil {
        throw SaveFailure("cannot move the unreadable \(file.path) aside, so it was not replaced")
      }
      return [:]
    }
  }

  /// Records that the suite in memory is the file whose stamp is `stamp` (nil: no file; call it holding the file's
  /// lock), and that the file holds `entries`, when this process wrote them. The stamp is taken before corelibs
  /// loads the file, never after: a change in between then reads as a change.
  func markSynced(at stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]? = nil) {
    savedFileSize.store(Int(stamp?.size ?? 0), ordering: .relaxed)
    state.withLock { state in
      state.checked = stamp
      if let entries, let stamp { state.known = (stamp, entries) }
    }
    corelibs.record(CorelibsDomain.Memory(loadedAt: stamp))
  }

  /// Whether the file is as this process last saved or loaded it (a file event was our own save).
  var isSynced: Bool {
    let stamp = file.stamp()
    return corelibs.isFile(stamp)
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundIssues: [DefaultsError] {
    state.withLock { $0.found }
  }
}
