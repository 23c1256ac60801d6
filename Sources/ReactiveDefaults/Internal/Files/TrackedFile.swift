import Foundation
import Synchronization

/// A file the library keeps memory in step with, as this process handles it (a suite's plist on Linux, a file store's
/// file everywhere): its advisory lock (re-entrant for the thread holding it), the completion of a journal a crash
/// left, the check of the file with its backups, the entries last saved or parsed, and the problems found, reported
/// to every store of the file. What memory is and how a save reaches the file is the ``FileRecord`` strategy's:
/// ``SuiteFileRecord`` (corelibs' copy of a suite) or ``PlainFileRecord`` (a file store's own dictionary).
///
/// (`@unchecked`: a class whose subclasses are the strategies cannot be `final`; every stored property is a `let` of
/// a `Sendable` type.)
class TrackedFile: @unchecked Sendable {
  let file: SuiteFile

  struct State {
    /// The file's stamp when last checked for problems: the same file is not checked (or reported) twice.
    var checked: SuiteFile.Stamp?
    /// What was found so far, replayed to each store that sets an issue handler.
    var found: [DefaultsError] = []
    /// The keys and values of the file as this process last saved or parsed it, and the file's stamp then: a save
    /// of a file unchanged since applies its writes to these instead of copying corelibs' whole domain (bridging
    /// every value, under corelibs' lock, which the writers of the suite wait for; a file store reads its own memory,
    /// but parses nothing).
    var known: (stamp: SuiteFile.Stamp, entries: [PropertyListKey: PropertyListValue])?

    /// The file's entries as last known, if the file is still as it was then.
    func entries(at stamp: SuiteFile.Stamp?) -> [PropertyListKey: PropertyListValue]? {
      guard let known, known.stamp == stamp else { return nil }
      return known.entries
    }
  }

  let state = Locked(State())
  /// The threads holding the suite's lock through this record, so that a thread already holding it (an
  /// ``DefaultsStore/edit(_:)`` whose body calls ``DefaultsStore/flush()``) runs on instead of waiting for itself:
  /// `flock` locks an open file, so a second `open` of the lock file in the same process would wait forever. Usually
  /// one; two when the lock file was removed while one thread held it (a program cleaning the folder) and another
  /// took the new file's lock: each must still see that it holds the lock. (With one owner recorded, the second
  /// thread's mark hid the first's, whose nested save then waited for the second's lock while the second waited for
  /// the first's write gate: the benchmark hung at exit so, its clean-up having removed a synced suite's lock file
  /// during the sync's edit.)
  let lockOwners = Locked<Set<UInt>>([])
  /// The size of the file after the last save or reload.
  let savedFileSize = Atomic<Int>(0)
  /// When memory loaded from a file whose stamp cannot yet be trusted stops counting as that file (monotonic
  /// nanoseconds; 0: memory counts as the file for as long as its stamp is the file's). See ``noteLoaded(at:)``.
  let trustedAfter = Atomic<UInt64>(0)

  /// How long after its last modification a file's stamp can still be taken by a rewrite in place: file systems
  /// stamp a write with a clock that ticks every few milliseconds (4 ms at 250 Hz, 10 ms at 100 Hz), so a writer that
  /// rewrites the file in place (plain `UserDefaults`, in another process) and keeps its size, in the same tick,
  /// leaves the stamp as it was. (Git knows it as the racily clean index entry.)
  static let racyWindow: UInt64 = 20_000_000

  init(file: SuiteFile) {
    self.file = file
  }

  /// What checking the file found.
  struct Check {
    var issue: DefaultsError?
    /// The domain the check read, when it read one (a save merges into it instead of reading the file again).
    var domain: SuiteFile.Domain?
    /// The file is not as this process last saved or loaded it: another process wrote it.
    var changedElsewhere = false
    /// The file's stamp when the check last looked at it (after its read, when it read the file).
    var stamp: SuiteFile.Stamp?
  }

  /// Runs `body` holding the suite's lock (the `flock` of its lock file), which excludes every other process and
  /// every other thread of this one; a thread that already holds it runs `body` at once.
  func locked<T>(_ body: () throws(SaveFailure) -> T) throws(SaveFailure) -> T {
    let thread = currentThreadID()
    // Only this thread ever stores its own id: seeing it means this thread holds the lock.
    if lockOwners.withLock({ $0.contains(thread) }) { return try body() }
    LockOrder.taking(.suiteFile)
    defer { LockOrder.released(.suiteFile) }
    return try file.withLock { () throws(SaveFailure) -> T in
      lockOwners.withLock { _ = $0.insert(thread) }
      defer { lockOwners.withLock { _ = $0.remove(thread) } }
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

  /// Whether ``check(memoryIsFile:)`` sets an unreadable file aside: a suite's plist must be out of the way before
  /// corelibs reads it (it could crash or hang on a malformed binary plist). A FIFO, socket or device is never moved:
  /// it is not the library's to rename, and corelibs is not let near it (``SuiteFileRecord/specialFile()``).
  /// A file store's file is read by the library's strict reader alone, which never blocks and refuses what it cannot
  /// parse: a read leaves it as it is (it may be `/dev/null`, or a file of another program's), and only a write sets
  /// a damaged regular file aside before replacing it (``entriesOnDisk(_:)``), never a device, FIFO or socket.
  var setsAsideWhenChecked: Bool { true }

  /// Checks the file if it changed since the last check. An unreadable one is reported and, where
  /// ``setsAsideWhenChecked``, kept: copied beside the plist, or moved there when corelibs could crash or hang reading
  /// it. Call it holding the file's lock; announce the problem once the lock is released.
  func check(memoryIsFile: (SuiteFile.Stamp?) -> Bool) throws(SaveFailure) -> Check {
    try recoverJournal()
    let stamp = file.stamp()
    let checked = state.withLock { $0.checked }
    var result = Check(changedElsewhere: !memoryIsFile(stamp), stamp: stamp)
    guard stamp != checked else { return result }
    do throws(SuiteFileProblem) {
      result.domain = try file.settledRead()
      // Known only if no writer that takes no lock changed the file while it was read.
      if let domain = result.domain, let stamp, file.stamp() == stamp {
        state.withLock { $0.known = (stamp, domain.entries) }
      }
    } catch {
      let backup: String?
      if !setsAsideWhenChecked || error.isLeftAlone || error == .empty {
        backup = nil
      } else if error.endangersReaders {
        backup = file.moveAside()
      } else {
        backup = file.keepCopy()
      }
      result.issue = .unreadableFile(path: file.path, reason: error.reason, backup: backup)
    }
    let checkedStamp = file.stamp()  // after any wait for a writer to finish, or a move
    result.stamp = checkedStamp
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

  /// Records that memory is the file whose stamp is `stamp` (nil: no file), and that the file holds `entries`,
  /// when this process wrote or parsed them (call it holding the file's lock).
  func recordSynced(at stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]?) {
    savedFileSize.store(Int(stamp?.size ?? 0), ordering: .relaxed)
    trustedAfter.store(0, ordering: .relaxed)
    state.withLock { state in
      state.checked = stamp
      if let entries, let stamp { state.known = (stamp, entries) }
    }
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundIssues: [DefaultsError] {
    state.withLock { $0.found }
  }

  /// Applies `changes` to `domain` (a nil value removes its key; progress reported), writes the result as the
  /// journal, flushed, and renames it over the file: one atomic replacement (call it holding the file's lock; a journal
  /// whose rename fails is completed by the next open). Returns the entries committed and the stamp they have.
  func commitMerge(
    _ changes: [(key: PropertyListKey, value: PropertyListValue?)], into domain: [PropertyListKey: PropertyListValue]
  ) throws(SaveFailure) -> (entries: [PropertyListKey: PropertyListValue], stamp: SuiteFile.Stamp?) {
    var domain = domain
    for (index, (key, value)) in changes.enumerated() {
      if index & 0x3FFF == 0 { Progress.report(.merging, done: index, of: changes.count) }
      domain[key] = value
    }
    let bytes = SuiteFile.encode(domain)
    try Self.checkSize(bytes)
    Progress.report(.writing, done: 0, of: 0)
    return (domain, try file.commitJournal(bytes))
  }

  /// Refuses to write a file the library would refuse to read (and move aside) at its next open.
  static func checkSize(_ bytes: Data) throws(SaveFailure) {
    guard bytes.count <= SuiteFile.maximumSize else {
      throw SaveFailure(
        "the domain would take \(bytes.count) bytes, more than the \(SuiteFile.maximumSize >> 20) MiB "
          + "a suite file may hold"
      )
    }
  }
}

extension TrackedFile {
  /// Notes that memory was just loaded from the file whose stamp (taken before the load) is `stamp`: if the file was
  /// modified less than ``racyWindow`` ago, a rewrite in place in the same tick of the file system's clock could keep
  /// that stamp while changing the content, so memory stops counting as the file once the window has passed (the next
  /// look at the file reloads it, once). Returns whether it was racy: the caller then looks again after the window.
  /// (Saves of this process stamp their file to the nanosecond themselves, and are never racy.)
  @discardableResult
  func noteLoaded(at stamp: SuiteFile.Stamp?) -> Bool {
    guard let stamp else {
      trustedAfter.store(0, ordering: .relaxed)
      return false
    }
    let modified = Int64(stamp.modified) &* 1_000_000_000 &+ Int64(stamp.modifiedNanoseconds)
    let age = realtimeNanoseconds() &- modified
    let racy = age < Int64(Self.racyWindow)
    trustedAfter.store(racy ? monotonicNanoseconds() &+ Self.racyWindow : 0, ordering: .relaxed)
    return racy
  }
}

extension TrackedFile {
  /// A moment inside a save (or an open) that no event marks, for ``saveSteps``.
  enum SaveStep: Sendable {
    /// A suite's save took the writes it saves (under the suite's lock); it has not checked the file.
    case afterTake
    /// The save checked the file; it has not taken the stamp it works from.
    case afterCheck
    /// An open found no file; corelibs has not loaded its copy (``SuiteFileRecord/open()``).
    case beforeLoadingMissingFile
    /// The journal is written; corelibs has not saved.
    case beforeCorelibsSave
    /// corelibs saved; the journal is not renamed yet (no write of ours can run until it is).
    case afterCorelibsSave
    /// corelibs' file is read back; the journal is about to be renamed over it.
    case beforeRename
    /// corelibs' file was just read back (the save has not decided between keeping it and renaming the journal).
    case afterReadBack
    /// The save kept corelibs' file and runs writes again; the file is not flushed yet.
    case beforeFlush
    /// The save is complete on disk (its journal renamed over the file, or corelibs' file kept), under the lock.
    case committed
  }

  /// Told each step of each save of the file at the path it is registered under (tests use it to act at that
  /// moment).
  /// (By path as Swift compares strings: safe for a test hook, no test registers two canonically equivalent paths.)
  static let saveSteps = Locked<[String: @Sendable (SaveStep) -> Void]>([:])
}
