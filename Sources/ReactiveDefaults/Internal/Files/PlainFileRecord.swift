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

  /// The file as it is now, checked (a damaged file is reported and backed up; it reads as empty), and its stamp,
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

  func save(
    takingWrites: () -> [PropertyListKey: PropertyListValue?],
    writtenSince: @escaping () -> [PropertyListKey: PropertyListValue?],
    excludingWrites: (() throws(SaveFailure) -> Void) throws(SaveFailure) -> Void,
    whenAlone: (() -> Bool) -> Bool,
    committed: () -> Void
  ) throws(SaveFailure) -> SaveOutcome {
    // Taking the lock creates the folder: a save with nothing to write into a folder that does not exist creates
    // nothing (what is unsaved is only looked at here; it is taken under the lock).
    if writtenSince().isEmpty && file.system.status(file.folder) == nil { return SaveOutcome() }
    var outcome = try locked { () throws(SaveFailure) -> SaveOutcome in
      // The stamp after the check, as the check's read is of that file (or newer): known entries of an older stamp
      // never stand in for a file another writer replaced in between.
      let (check, stamp) = try checkThenStamp()
      let writes = takingWrites()
      var entries = try knownOrOnDisk(check, at: stamp)
      for (key, value) in writes { entries[key] = value }
      let saved: MemoryOfFile
      if entries.isEmpty {
        // Nothing to keep: no file, as corelibs saves an empty domain (a removal, atomic as a rename is).
        if stamp != nil { file.remove(file.path) }
        saved = .absent
      } else {
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
        saved = savedStamp.map(MemoryOfFile.loaded) ?? .untrusted
      }
      if check.changedElsewhere {
        // Another process changed the file: memory becomes the merged file, with the writes made since over it.
        try excludingWrites { () throws(SaveFailure) in
          var merged = entries
          for (key, value) in writtenSince() { merged[key] = value }
          memory.replace(with: merged, loaded: saved)
        }
      } else {
        memory.record(saved)
      }
      if case .loaded(let savedStamp) = saved {
        recordSynced(at: savedStamp, entries: entries)
      } else {
        recordSynced(at: nil, entries: nil)
      }
      committed()
      return SaveOutcome(issue: check.issue, changedElsewhere: check.changedElsewhere)
    }
    // Flushed after the lock: the next process waiting for it need not wait for the disk as well. The save is
    // committed by then: a failure to flush is reported, never a failed save (whose writes, tried again, would be
    // applied over what another process saved since).
    do throws(SaveFailure) {
      try file.flushFolder(of: file.path)
    } catch {
      outcome.issue = outcome.issue ?? DefaultsError.saveFailed(path: file.path, reason: "saved, but \(error.reason)")
    }
    return outcome
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

  func merge(_ changes: [(key: PropertyListKey, value: PropertyListValue?)]) throws(SaveFailure) -> DefaultsError? {
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
  func saveForeignWrites() -> Bool { true }
}
