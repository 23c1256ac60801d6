import Foundation
import Synchronization

/// What memory is, against the file (``TrackedFile``): the strategy where a suite store and a file store differ.
/// ``SuitePersistence`` schedules saves and reloads the same way for both.
protocol FileRecord: TrackedFile {
  /// Whether memory is the file whose stamp is `stamp` (nil: no file), as this process last saved or loaded it.
  func isFile(_ stamp: SuiteFile.Stamp?) -> Bool
  /// The first look at the file, when the store's storage is made; the problem found.
  func open() -> DefaultsError?
  /// Which strategy this is: a save is a different sequence of steps for each (``SuitePersistence/save(into:)``).
  var kind: FileRecordKind { get }
  /// Makes memory the file as it is, when `whenIdle` runs its body (no write running, nothing unsaved); returns the
  /// problem found and whether it did (else the caller saves, which merges the file too).
  func reload(whenIdle: (() -> Bool) -> Bool) throws(SaveFailure) -> (issue: DefaultsError?, reloaded: Bool)
  /// Writes `changes` into the file in one atomic replacement, keeping its other keys, and makes memory that file
  /// (call it with nothing unsaved and no write running). `loadingCopy` false: a suite's copy in corelibs is dropped
  /// and not loaded again (for a tool that exits right after: loading 100,000 keys is a third of an import).
  func merge(_ changes: [(key: PropertyListKey, value: PropertyListValue?)], loadingCopy: Bool) throws(SaveFailure)
    -> DefaultsError?
  /// Makes memory the missing file (the folder is gone), when nothing is unsaved; false when it could not.
  func loadMissingFile() -> Bool
  /// Saves what memory holds that the library did not write (plain `UserDefaults` writes), before a merge; false
  /// when it could not, throws when what guards the file meanwhile could not be written.
  func saveForeignWrites() throws(SaveFailure) -> Bool
  /// Why memory cannot be made the file now, in words, when something keeps it from being loaded (a FIFO where a
  /// suite's plist should be); nil otherwise.
  var cannotLoad: String? { get }
  /// How many distinct keys written since the last save trigger a save at once.
  var unsavedKeysBeforeSave: Int { get }
  /// Whether a reload may read the file without its lock when the lock cannot be taken (a file store in a folder this
  /// process may only read); a suite's copy is loaded under the lock only.
  var readsWithoutTheLock: Bool { get }
}

/// A ``FileRecord`` as the strategy it is.
enum FileRecordKind {
  case suite(SuiteFileRecord)
  case fileStore(PlainFileRecord)
}

extension FileRecord {
  /// ``TrackedFile/check(memoryIsFile:)`` against this memory.
  func check() throws(SaveFailure) -> Check {
    try check(memoryIsFile: isFile)
  }

  /// ``check()``, then the file's stamp, which a save works from. A writer that takes no lock (a plain `rm`, an
  /// editor's save) can change the file between the two: memory is then not the file at that stamp either, so the
  /// check says the file changed elsewhere (the save merges the file as it is, and the observers hear of it), and a
  /// domain the check read before the change is dropped (the save reads the file again). (Otherwise a save whose check
  /// found the file as this process had left it, and whose stamp then found no file, would write into a file without
  /// the removed keys and tell no observer; a file store's memory would even keep them.)
  func checkThenStamp() throws(SaveFailure) -> (check: Check, stamp: SuiteFile.Stamp?) {
    var check = try check()
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.afterCheck)
    let stamp = file.stamp()
    if stamp != check.stamp { check.domain = nil }
    if !isFile(stamp) { check.changedElsewhere = true }
    return (check, stamp)
  }

  /// Whether the file is as this process last saved or loaded it (a file event was our own save): its stamp is the
  /// one memory was loaded at, and that stamp was not racy (``TrackedFile/noteLoaded(at:)``) or its window has passed
  /// since.
  var isSynced: Bool {
    guard isFile(file.stamp()) else { return false }
    let after = trustedAfter.load(ordering: .relaxed)
    return after == 0 || monotonicNanoseconds() < after
  }
}
