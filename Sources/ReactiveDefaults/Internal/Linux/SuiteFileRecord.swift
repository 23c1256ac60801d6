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
/// No write of ours runs from step 3 to the end of step 4. The steps are this record's (SuiteFileRecord+Saving.swift),
/// their values and decisions ``SuiteSave``'s, and ``SuitePersistence`` runs them (SuitePersistence+SuiteSave.swift).
/// Each open of the suite first completes a journal left by a crash.
final class SuiteFileRecord: TrackedFile, FileRecord, @unchecked Sendable {
  /// corelibs' copy of the suite, and what it is.
  let corelibs: CorelibsDomain
  /// The suite's `UserDefaults`, whose memory is corelibs' copy.
  let defaults: SendableDefaults

  init(file: SuiteFile, corelibs: CorelibsDomain, defaults: UserDefaults) {
    self.corelibs = corelibs
    self.defaults = SendableDefaults(instance: defaults)
    super.init(file: file)
  }

  var kind: FileRecordKind { .suite(self) }

  func isFile(_ stamp: SuiteFile.Stamp?) -> Bool {
    corelibs.isFile(stamp)
  }

  func loadMissingFile() -> Bool {
    // Without the suite's lock (the folder is gone): what the file held cannot be known until corelibs loads it.
    corelibs.reloadCopy(file: { .unknown })
  }

  func saveForeignWrites() throws(SaveFailure) -> Bool {
    try journaled { corelibs.synchronize(file: fileBeforeSynchronize) }
  }

  /// corelibs' synchronize of the suite (``CorelibsDomain/synchronize(file:)``), told what the file holds; false,
  /// with nothing asked of corelibs, while a FIFO, socket or device stands there (``specialFile()``).
  func synchronizeCorelibs() -> Bool {
    guard specialFile() == nil else { return false }
    return corelibs.synchronize(file: fileBeforeSynchronize)
  }

  /// What stands where the plist should be, when it is a FIFO, a socket or a device ("a FIFO"); nil otherwise.
  /// corelibs opens the plist at any load or save of the suite, and would block forever on a FIFO with no writer (or
  /// read a device without end): while one stands there, corelibs is never asked to load or save the suite (reads
  /// give its copy as loaded before; saves, reloads and edits fail or wait), and nothing renames or replaces it.
  func specialFile() -> String? {
    SuiteFile.specialFileKind(file.system.status(file.path)?.kind)
  }

  /// Throws the reason while ``specialFile()`` finds one.
  func refuseSpecialFile() throws(SaveFailure) {
    guard let kind = specialFile() else { return }
    throw SaveFailure(
      "\(file.path) is \(kind), not a file: Foundation would block reading it, so the suite is neither loaded nor "
        + "saved while it stands there")
  }

  var cannotLoad: String? {
    specialFile().map { "\(file.path) is \($0), not a file: Foundation would block reading it" }
  }

  /// corelibs' copy dropped (``CorelibsDomain/dropCopy(file:)``), told what the file holds, ``journaled(_:)``.
  func dropCorelibsCopy() throws(SaveFailure) -> Bool {
    try journaled { corelibs.dropCopy(file: fileBeforeSynchronize) }
  }

  /// What the file holds as one of corelibs' synchronizes begins (``WritesInCopy/FileBefore``): corelibs' copy is the
  /// file as it is now (its stamp is the one the copy was recorded loaded at), or the file's entries as this process
  /// last saved or parsed them at this stamp, or else as read now. Call it holding the suite's lock.
  func fileBeforeSynchronize() -> WritesInCopy.FileBefore {
    let stamp = file.stamp()
    if corelibs.isFile(stamp) { return .copyIsFile }
    if let known = knownEntries(at: stamp) { return .entries(known) }
    do throws(SuiteFileProblem) {
      return .entries(try file.read()?.entries ?? [:])
    } catch {
      return .unknown
    }
  }

  /// Runs `synchronize` (corelibs' synchronize of the suite: a drop of its copy, ``CorelibsDomain/dropCopy(file:)``, or
  /// a save of what it holds unsaved) with the file as it is now kept as the journal meanwhile; call it holding the
  /// suite's lock, with no journal of a save's there. A drop is a save when corelibs' copy holds plain `UserDefaults`
  /// writes of this process, which another thread can make at any moment (no look beforehand can tell), and corelibs
  /// saves in place: a process killed in the middle would leave the file empty or cut, every key lost (the history
  /// checker's in-process plain writers, killed). With the journal there, the next open puts the file back as it was
  /// (without those plain writes, which were never saved). The journal is not flushed to disk: it guards against the
  /// process's death, as a plain `synchronize()` cannot, not against a power cut in the middle of corelibs' write
  /// (flushed, it would make every reload wait for the disk: ~3 ms here, against ~0.1 ms). With no file, the journal
  /// is an empty suite. A journal a killed process left is completed first (an import reaches here before any check).
  /// Returns what `synchronize` returns; throws, having run nothing, when the journal cannot be written (a full disk,
  /// a suite name too long for `.journal`: the library's saves of the suite fail so too).
  func journaled(_ synchronize: () -> Bool) throws(SaveFailure) -> Bool {
    try refuseSpecialFile()
    try recoverJournal()
    let bytes: Data
    do {
      bytes = try file.system.readFile(file.path, SuiteFile.maximumSize) ?? SuiteFile.encode([:])
    } catch {
      // A file the library cannot read (a link, a file past the size limit; the check reported it) holds no settings
      // of its: nothing to keep, and corelibs synchronizes as it would without the library.
      return synchronize()
    }
    try file.writeNewFile(file.journalPath, bytes, flushing: false)
    defer { file.remove(file.journalPath) }
    return synchronize()
  }

  /// ``CorelibsDomain/reloadCopy(file:)`` with its drop ``journaled(_:)``.
  func reloadCopy() throws(SaveFailure) -> Bool {
    guard try dropCorelibsCopy() else { return false }
    corelibs.load()
    return true
  }

  var readsWithoutTheLock: Bool { false }

  /// corelibs' cost of adding a key grows with the number of unsaved keys, and a save costs O(keys in the file):
  /// saving every √(file size in bytes) keys (at least 256) balances the two.
  var unsavedKeysBeforeSave: Int {
    max(SuitePersistence.minimumUnsavedKeysBeforeSave, Int(Double(savedFileSize.load(ordering: .relaxed)).squareRoot()))
  }

  /// The first look at the file, before corelibs reads it: completes a journal a crash left, checks the file, and
  /// makes corelibs' copy the file (``CorelibsDomain/reloadCopy(file:)``: corelibs may hold an older copy from an earlier
  /// store of the suite, or from a plain `UserDefaults`), holding the suite's lock. An XML file whose frame is whole
  /// is not parsed here (``SuiteFile/glance()``): parsing 10,000 keys cost more than opening the suite otherwise, and
  /// corelibs, which parses it next, refuses bad XML without harm. If corelibs reloaded its copy and the copy lacks
  /// the key the file names first, corelibs could not parse the file: the full check runs at once, so the file is
  /// reported, and copied before anything could replace it. (When corelibs could not drop its older copy, that copy
  /// proves nothing about the file: the suite is not marked as loaded, so the next reload or edit loads it.)
  ///
  /// With no file (and no journal) and an empty copy, nothing is created, and nothing is saved: the copy is only
  /// recorded as the missing file.
  func open() -> DefaultsError? {
    // An empty copy: corelibs holds no write of this process to save. A copy that holds keys may hold plain
    // `UserDefaults` writes of this process, which dropping it saves, in place: that takes the lock, as every save
    // does (unlocked, corelibs' save could read another process's save half-written, as an empty file, and write its
    // copy over it: the history checker's in-process plain writers lost two keys so).
    guard file.stamp() != nil || file.journalState() != .absent || !corelibs.isEmpty else {
      // Without the lock (nothing is created for a suite that does not exist), and so without dropping the copy:
      // a drop is corelibs' synchronize, which saves in place whatever the copy holds unsaved, and another thread's
      // plain `UserDefaults` write can land between the look above and the drop (the history checker's plain
      // writers: a file created, or another process's save cut to an empty file, by no lock's holder). An empty copy
      // with no file reads as the missing file does; corelibs reloads an empty copy itself when the folder changes.
      // Another process's save can create the file before corelibs loads: the copy counts as the missing file only
      // if it is empty, as that file reads. A copy loaded from a file created meanwhile is not the file once that
      // file goes (a later deletion would find memory "as the file"), so it is untrusted, and the next read or edit
      // reloads. (Recorded as the missing file whatever corelibs loaded, it would never be reloaded in a process
      // that never observes the suite, and once the file was deleted every read and edit would take the stale copy
      // for the missing file.)
      TrackedFile.saveSteps.withLock { $0[file.path] }?(.beforeLoadingMissingFile)
      corelibs.record(corelibs.isEmpty ? .absent : .untrusted)
      return nil
    }
    do {
      return try locked { () throws(SaveFailure) -> DefaultsError? in
        try recoverJournal()
        // corelibs would block loading it: its copy is left as it is (empty, or as an earlier store loaded it),
        // untrusted, and the check reports what stands there.
        if specialFile() != nil {
          corelibs.record(.untrusted)
          return try check().issue
        }
        if case .looksWhole(let firstKey)? = try? file.glance() {
          let stamp = file.stamp()
          let fresh = try reloadCopy()
          if firstKey.map(corelibs.has) ?? true {
            if fresh {
              markSynced(at: stamp)
              noteLoaded(at: stamp)
            }
            return nil
          }
        }
        let check = try check()
        let stamp = file.stamp()
        if try reloadCopy() && check.issue == nil {
          markSynced(at: stamp, entries: check.domain?.entries)
          noteLoaded(at: stamp)
        }
        return check.issue
      }
    } catch {
      return file.failure(error)
    }
  }

  /// Records that the suite in memory is the file whose stamp is `stamp` (nil: no file; call it holding the file's
  /// lock), and that the file holds `entries`, when this process wrote them. The stamp is taken before corelibs
  /// loads the file, never after: a change in between then reads as a change.
  func markSynced(at stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]? = nil) {
    recordSynced(at: stamp, entries: entries)
    // With no file, the copy is the missing file only if it is empty: a writer that takes no lock may have created
    // the file before corelibs loaded it (``open()``).
    let memory = stamp == nil && !corelibs.isEmpty ? CorelibsDomain.Memory.untrusted : .init(loadedAt: stamp)
    corelibs.record(memory)
    if memory != .untrusted { corelibs.writes.copyLoaded() }
  }

}
