import Foundation
import Synchronization

/// A file store's memory (``DefaultsStore/init(fileURL:)``): the file's keys and values as this process last saved or
/// loaded them, with the writes made since applied, and what that is against the file. A read is a dictionary lookup
/// under a lock: no `UserDefaults`, no bridging.
final class FileMemory: Sendable {
  private struct State {
    var entries: [PropertyListKey: PropertyListValue] = [:]
    var loaded = MemoryOfFile.untrusted
  }

  private let state = Locked(State())

  func value(forKey key: PropertyListKey) -> PropertyListValue? {
    state.withLock { $0.entries[key] }
  }

  /// Stores a write (nil: removes the key).
  func set(_ value: PropertyListValue?, forKey key: PropertyListKey) {
    state.withLock { $0.entries[key] = value }
  }

  var entries: [PropertyListKey: PropertyListValue] { state.withLock { $0.entries } }

  /// What memory is against the file.
  var loaded: MemoryOfFile { state.withLock { $0.loaded } }

  /// Records what memory is now (call it holding the file's lock, right after the save or load that made it so).
  func record(_ loaded: MemoryOfFile) {
    state.withLock { $0.loaded = loaded }
  }

  /// Makes memory `entries`, which are the file as `loaded` says (call it holding the file's lock, with no write of
  /// ours in progress).
  func replace(with entries: [PropertyListKey: PropertyListValue], loaded: MemoryOfFile) {
    state.withLock { $0 = State(entries: entries, loaded: loaded) }
  }
}

/// The file of a file store, whose memory is its own (``FileMemory``), never corelibs': the ``FileRecord`` strategy
/// beside ``SuiteFileRecord``. With nothing in between, a save is the plain atomic replacement, under the file's lock:
/// the writes applied to the file's entries (as this process last saved or parsed them; read with the strict reader
/// when another process changed the file), written to `<file>.journal`, flushed, renamed over the file, the folder
/// flushed. No reader ever finds the file cut, and a save costs O(keys in the file) whatever the number of writes.
/// A save that leaves no key removes the file, as corelibs does a suite's.
final class PlainFileRecord: TrackedFile, FileRecord, @unchecked Sendable {
  let memory: FileMemory

  init(file: SuiteFile, memory: FileMemory) {
    self.memory = memory
    super.init(file: file)
  }

  var kind: FileRecordKind { .fileStore(self) }

  func isFile(_ stamp: SuiteFile.Stamp?) -> Bool {
    memory.loaded.isFile(stamp)
  }

  /// No dirty list to keep short: writes are saved by the coalesced save (or a flush), whatever their number.
  var unsavedKeysBeforeSave: Int { .max }

  /// Loads the file (with no file and no journal, memory is the missing file, and nothing is created). A file this
  /// process may only read (the lock file cannot be made beside it) is read without the lock.
  func open() -> DefaultsError? {
    guard file.stamp() != nil || file.journalState() != .absent else {
      memory.replace(with: [:], loaded: .absent)
      return nil
    }
    var locked = false
    do {
      return try self.locked { () throws(SaveFailure) -> DefaultsError? in
        locked = true
        return try load().issue
      }
    } catch  where !locked {
      do { return try load().issue } catch { return file.failure(error) }
    } catch {
      return file.failure(error)
    }
  }

  /// A file this process may only read (the lock file cannot be made beside it) is read without the lock.
  var readsWithoutTheLock: Bool { true }

  /// A read never renames or copies the file (``TrackedFile/setsAsideWhenChecked``).
  override var setsAsideWhenChecked: Bool { false }

  /// The file as it is now, checked (a damaged file is reported; it reads as empty), and its stamp,
  /// taken before it was read: a change made while it was read then reads as a change.
  private func current() throws(SaveFailure) -> (
    check: Check, stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]
  ) {
    try recoverJournal()
    let stamp = file.stamp()
    let check = try check()
    let entries = check.domain?.entries ?? knownEntries(at: stamp) ?? (try? file.settledRead())??.entries ?? [:]
    return (check, stamp, entries)
  }

  private func load() throws(SaveFailure) -> Check {
    let (check, stamp, entries) = try current()
    memory.replace(with: entries, loaded: MemoryOfFile(loadedAt: stamp))
    noteLoaded(at: stamp)
    return check
  }

  // MARK: The save's steps (``SuitePersistence`` runs them: SuitePersistence+Saving.swift)

  /// What one save of a file store did, handed from step to step.
  struct Save {
    let check: Check
    /// The file's entries, with the writes applied: what the file holds now.
    let entries: [PropertyListKey: PropertyListValue]
    /// What memory is against the file once it holds `entries`.
    let saved: MemoryOfFile
  }

  /// Whether the file's folder exists. Taking the lock creates it: a save with nothing to write into a folder that
  /// does not exist creates nothing.
  var folderExists: Bool { file.system.status(file.folder) != nil }

  /// Applies `writes` (taken after the check, holding the file's lock) to the file's entries and commits them: the
  /// journal renamed over the file, or the file removed when no key is left (as corelibs saves an empty domain: a
  /// removal, atomic as a rename is). Throws with the file as it was.
  func commitSave(
    _ check: Check, at stamp: SuiteFile.Stamp?, writes: [PropertyListKey: PropertyListValue?]
  ) throws(SaveFailure) -> Save {
    var entries = try knownOrOnDisk(check, at: stamp)
    for (key, value) in writes { entries[key] = value }
    guard !entries.isEmpty else {
      if stamp != nil { file.remove(file.path) }
      return Save(check: check, entries: entries, saved: .absent)
    }
    let bytes = SuiteFile.encode(entries)
    try Self.checkSize(bytes)
    let journal = file.journalPath
    try file.writeNewFile(journal, bytes)
    let savedStamp = file.stamp(of: journal)
    do throws(SaveFailure) {
      try file.move(journal, over: file.path, flushing: false)
    } catch {
      file.remove(journal)
      throw error
    }
    return Save(check: check, entries: entries, saved: savedStamp.map(MemoryOfFile.loaded) ?? .untrusted)
  }

  /// Another process had changed the file: memory becomes the merged file, with the writes made since over it (call
  /// it with no write of ours running).
  func adoptMerged(_ save: Save, writesMadeSince: [PropertyListKey: PropertyListValue?]) {
    var merged = save.entries
    for (key, value) in writesMadeSince { merged[key] = value }
    memory.replace(with: merged, loaded: save.saved)
  }

  /// Records what memory and the file are after the save (`merged`: ``adoptMerged(_:writesMadeSince:)`` ran).
  func finishSave(_ save: Save, merged: Bool) -> SaveOutcome {
    if !merged { memory.record(save.saved) }
    if case .loaded(let savedStamp) = save.saved {
      recordSynced(at: savedStamp, entries: save.entries)
    } else {
      recordSynced(at: nil, entries: nil)
    }
    return SaveOutcome(issue: save.check.issue, changedElsewhere: save.check.changedElsewhere)
  }

  /// Flushes the folder after the lock (the next process waiting for it need not wait for the disk as well). The save
  /// is committed by then: a failure to flush is reported, never a failed save (whose writes, tried again, would be
  /// applied over what another process saved since).
  func flushFolderAfterSave(_ outcome: inout SaveOutcome) {
    do throws(SaveFailure) {
      try file.flushFolder(of: file.path)
    } catch {
      outcome.issue = outcome.issue ?? DefaultsError.saveFailed(path: file.path, reason: "saved, but \(error.reason)")
    }
  }

  func reload(whenIdle: (() -> Bool) -> Bool) throws(SaveFailure) -> (issue: DefaultsError?, reloaded: Bool) {
    var locked = false
    do {
      return try self.locked { () throws(SaveFailure) -> (issue: DefaultsError?, reloaded: Bool) in
        locked = true
        return try reloadNow(whenIdle)
      }
    } catch  where !locked {
      // A file this process may only read: read without the lock.
      return try reloadNow(whenIdle)
    }
  }

  private func reloadNow(_ whenIdle: (() -> Bool) -> Bool) throws(SaveFailure) -> (
    issue: DefaultsError?, reloaded: Bool
  ) {
    let (check, stamp, entries) = try current()
    let reloaded = whenIdle {
      // The file may have gone since it was read (its folder removed, which a reader taking no lock records as the
      // missing file meanwhile): memory is then not that file.
      memory.replace(with: entries, loaded: file.stamp() == stamp ? MemoryOfFile(loadedAt: stamp) : .untrusted)
      noteLoaded(at: stamp)
      return true
    }
    return (check.issue, reloaded)
  }

  func merge(_ changes: [(key: PropertyListKey, value: PropertyListValue?)], loadingCopy: Bool) throws(SaveFailure)
    -> DefaultsError?
  {
    try locked { () throws(SaveFailure) -> DefaultsError? in
      let check = try check()
      let stamp = file.stamp()
      let (domain, savedStamp) = try commitMerge(changes, into: knownOrOnDisk(check, at: stamp))
      memory.replace(with: domain, loaded: savedStamp.map(MemoryOfFile.loaded) ?? .untrusted)
      recordSynced(at: savedStamp, entries: domain)
      return check.issue
    }
  }

  /// The file's entries: as last saved or parsed when it is still that file, else read (``entriesOnDisk(_:)``).
  private func knownOrOnDisk(_ check: Check, at stamp: SuiteFile.Stamp?) throws(SaveFailure)
    -> [PropertyListKey: PropertyListValue]
  {
    if let known = knownEntries(at: stamp) { return known }
    return try entriesOnDisk(check)
  }

  func loadMissingFile() -> Bool {
    memory.replace(with: [:], loaded: .absent)
    return true
  }

  /// Nothing writes memory but the library.
  func saveForeignWrites() throws(SaveFailure) -> Bool { true }

  /// The library's reader never blocks: an unreadable file is reported, and memory follows what can be read.
  var cannotLoad: String? { nil }
}
