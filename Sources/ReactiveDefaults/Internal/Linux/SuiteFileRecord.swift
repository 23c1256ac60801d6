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
      // Without the lock (nothing is created for a suite that does not exist), so another process's save can create
      // the file before corelibs loads: the copy counts as the missing file only if it is empty, as that file reads.
      // A copy loaded from a file created meanwhile is not the file once that file goes (a later deletion would find
      // memory "as the file"), so it is untrusted, and the next read or edit reloads. (Before, it was recorded as the
      // missing file whatever corelibs loaded: in a process that never observed the suite nothing reloaded it, and
      // once the file was deleted every read and edit took the stale copy for the missing file; history checker,
      // seed 666665072.)
      SuiteFileRecord.saveSteps.withLock { $0[file.path] }?(.beforeLoadingMissingFile)
      if corelibs.reloadCopy() { corelibs.record(corelibs.isEmpty ? .absent : .untrusted) }
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

  /// The file's entries as this process last saved or parsed it, if the file is still as it was then (its stamp is
  /// `stamp`).
  func knownEntries(at stamp: SuiteFile.Stamp?) -> [PropertyListKey: PropertyListValue]? {
    state.withLock { $0.entries(at: stamp) }
  }

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
    // With no file, the copy is the missing file only if it is empty: a writer that takes no lock may have created
    // the file before corelibs loaded it (``open()``).
    corelibs.record(stamp == nil && !corelibs.isEmpty ? .untrusted : CorelibsDomain.Memory(loadedAt: stamp))
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
