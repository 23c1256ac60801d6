import Foundation
import Synchronization

/// What this process knows of one suite's file: whether it was checked, whether the suite in memory reflects it,
/// and the problems found in it. Shared by the suite's hub and by the saves of every other suite, which corelibs
/// makes write or forget this suite too (see ``FileAccess``).
final class SuiteFileRecord: Sendable {
  let file: SuiteFile

  private struct State {
    /// The file's stamp when last checked for problems: the same file is not checked (or reported) twice.
    var checked: SuiteFile.Stamp?
    /// The file's stamp when this process last saved or loaded it: the suite in memory is this file.
    var synced: SuiteFile.Stamp?
    /// What was found so far, replayed to each store that sets an issue handler.
    var found: [DefaultsError] = []
    var listeners: [ObjectIdentifier: @Sendable (DefaultsError) -> Void] = [:]
  }

  private let state = Locked(State())
  /// The size of the file after the last save or reload.
  let savedFileSize = Atomic<Int>(0)

  init(file: SuiteFile) {
    self.file = file
  }

  /// What checking the file found.
  struct Check {
    var issue: DefaultsError?
    /// The file is not as this process last saved or loaded it: another process wrote it.
    var changedElsewhere = false
  }

  /// Checks the file if it changed since the last check; an unreadable one is copied beside the plist (moved,
  /// when corelibs could crash on it) and recorded, so that no save destroys it silently. Call it holding the
  /// file's lock and ``FileAccess/lock``; announce the problem once every lock is released.
  func check() -> Check {
    let stamp = file.stamp()
    let (checked, synced) = state.withLock { ($0.checked, $0.synced) }
    var result = Check(changedElsewhere: stamp != synced)
    guard stamp != checked else { return result }
    if stamp != nil, let problem = file.settledProblem() {
      let keep = problem.reason != "is empty" && problem.reason != "is a folder, not a file"
      result.issue = .unreadableFile(
        path: file.path, reason: problem.reason,
        backup: keep ? file.keepAside(moving: problem.endangersReaders) : nil)
    }
    let checkedStamp = file.stamp()  // after any wait for a writer to finish
    state.withLock { state in
      state.checked = checkedStamp
      if let issue = result.issue { state.found = Array((state.found + [issue]).suffix(16)) }
    }
    return result
  }

  /// Records that the suite in memory is the file as it is now (call it holding the file's lock).
  func markSynced() {
    let stamp = file.stamp()
    savedFileSize.store(Int(stamp?.size ?? 0), ordering: .relaxed)
    state.withLock { state in
      state.checked = stamp
      state.synced = stamp
    }
  }

  /// Whether the file is as this process last saved or loaded it (a file event was our own save).
  var isSynced: Bool {
    guard let stamp = file.stamp() else { return false }
    return state.withLock { $0.synced == stamp }
  }

  /// Tells every store's issue handler about a file problem.
  func announce(_ issue: DefaultsError?) {
    guard let issue else { return }
    for listener in state.withLock({ Array($0.listeners.values) }) { listener(issue) }
  }

  func addIssueListener(_ id: ObjectIdentifier, _ listener: @escaping @Sendable (DefaultsError) -> Void) {
    state.withLock { $0.listeners[id] = listener }
  }

  func removeIssueListener(_ id: ObjectIdentifier) {
    _ = state.withLock { $0.listeners.removeValue(forKey: id) }
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundIssues: [DefaultsError] {
    state.withLock { $0.found }
  }
}

/// This process's access to suite files: saves, reloads and first checks, one at a time.
///
/// corelibs' `synchronize()` of a named suite does not stop at that suite: `CFPreferencesAppSynchronize` goes
/// through every domain the process has loaded (`_CFSynchronizeDomainCache`), writing each one with unsaved
/// changes and forgetting the others, which are read again from disk on next use. So a save holds the lock of
/// every suite file the process knows, after checking each.
enum FileAccess {
  static let lock = Locked(())
  /// The file records of every live hub. A leaf lock: nothing is locked while it is held.
  private static let records = Locked<[ObjectIdentifier: SuiteFileRecord]>([:])

  /// Makes the record known to every save from now on (a hub's first step, before any write through it).
  static func register(_ record: SuiteFileRecord) {
    records.withLock { $0[ObjectIdentifier(record)] = record }
  }

  /// Forgets the record (a hub's last step).
  static func unregister(_ record: SuiteFileRecord) {
    _ = records.withLock { $0.removeValue(forKey: ObjectIdentifier(record)) }
  }

  /// Runs `synchronize` holding ``lock`` and the locks of `own` (a suite whose file is not known has none) and of
  /// every other live suite, each file checked first (a suite that has no file yet is locked too: a write to it may
  /// land just before the synchronize, which would then create its file). `own` is then marked synced. The others
  /// are not: a file corelibs wrote for them, or that a writer taking no lock wrote meanwhile, must be checked again
  /// and reloaded by their own hubs. Announces the problems found, outside every lock, and returns `own`'s check.
  static func synchronize(_ own: SuiteFileRecord?, _ synchronize: () -> Void) -> SuiteFileRecord.Check {
    let (others, ownCheck, otherChecks) = lock.withLock { _ in
      let others = records.withLock { Array($0.values) }.filter { $0 !== own }
      let files = (own.map { [$0.file] } ?? []) + others.map(\.file)
      return SuiteFile.withLocks(files) {
        () -> ([SuiteFileRecord], SuiteFileRecord.Check, [SuiteFileRecord.Check]) in
        let ownCheck = own?.check() ?? SuiteFileRecord.Check()
        let otherChecks = others.map { $0.check() }
        synchronize()
        own?.markSynced()
        return (others, ownCheck, otherChecks)
      }
    }
    own?.announce(ownCheck.issue)
    for (other, check) in zip(others, otherChecks) { other.announce(check.issue) }
    return ownCheck
  }
}
