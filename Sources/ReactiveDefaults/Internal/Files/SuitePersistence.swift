import Foundation
import Synchronization

/// The library's handling of one file, on every platform (a file store's file; on Linux also a suite's plist): when
/// to save (SuitePersistence+Saving.swift: coalesced saves, saves at once, the hand-off of a dropped hub, registration
/// for ``SaveOnExit``), edits and imports under the file's lock (SuitePersistence+Transactions.swift), reloads when
/// another process writes the file and the folder watch (SuitePersistence+Reloading.swift), and one persistence per
/// file (SuitePersistence+Registry.swift). Its bookkeeping is the ``SuiteSync`` state machine; the file operations
/// themselves (lock, journal, atomic rename, checks and backups) are its ``FileRecord``'s (``PlainFileRecord``; on
/// Linux ``SuiteFileRecord``).
///
/// There is one per file in this process (``shared(_:make:)``), serving the hub of its suite through the ``Hooks`` the
/// hub attaches; it holds no reference to the hub, so it can outlive it: a hub dropped with unsaved writes hands them
/// to a background save (``handOff()``), never saving in `deinit`. A hub made for the suite meanwhile takes this one
/// over, with its bookkeeping: what the background save finds (another process's changes merged) reaches the new hub's
/// observers, and the two never drop or save the file's memory (a suite's: corelibs' copy) behind each other's back.
final class SuitePersistence: Sendable {
  /// What the persistence asks of its hub.
  struct Hooks: Sendable {
    /// Re-reads the observed keys and tells their observers (after a reload, or a save that merged another
    /// process's changes).
    var refresh: @Sendable () -> Void
    /// Tells the stores' issue handlers.
    var announce: @Sendable (DefaultsError) -> Void
    /// Runs the body while no write is in progress.
    var excludingWrites: @Sendable (() -> Bool) -> Bool
    /// The hub's number of observers.
    var observerCount: @Sendable () -> Int
  }

  /// What a write means for saving, decided under the lock and done after it.
  typealias WriteAction = SuiteSync.WriteAction

  struct State {
    /// The saving and reloading phases.
    var sync = SuiteSync()
    /// The tools' watchers of the whole file (``watchFile(_:)``).
    var fileWatchers: [UInt64: @Sendable () -> Void] = [:]
    var nextFileWatcherID: UInt64 = 0
    /// The hooks of the hubs attached, oldest first: one, but for the moments when a hub is dropped while another is
    /// made for the suite, or two are made at once and one is discarded.
    var hooks: [(hub: ObjectIdentifier, hooks: Hooks)] = []
  }

  /// What memory is against the file: corelibs' copy of a suite, or a file store's own.
  let record: any FileRecord
  var file: SuiteFile { record.file }
  let state = Locked(State())
  let watch = Locked<FileWatch?>(nil)
  /// Where this file's background work runs: coalesced saves, reloads on file events, the save of a dropped hub's
  /// writes. Serial, so a queue of its own: that work waits (for the file's lock, which another process may hold;
  /// for corelibs' turn; for `fsync`), and Dispatch runs a serial queue on a thread of its own when it must, where
  /// work on `DispatchQueue.global()` waits for one of as many threads as there are cores, which Swift's tasks run on
  /// too (on Linux): a few blocked saves there held back every task of the process.
  let background = DispatchQueue(label: "ReactiveDefaults.file")
  /// When a read last looked at the file (``followFile()``), on the monotonic clock.
  let lastFileCheck = Atomic<UInt64>(0)
  /// When this process's last save of the file was complete on disk (its rename returned, or corelibs' rewrite kept),
  /// on the monotonic clock every process shares; 0 before the first (for the benchmark's cross-process latency).
  private let lastCommit = Atomic<UInt64>(0)

  /// Records that a save is complete on disk, now (``lastSaveCommitted``).
  func noteSaveCommitted() {
    lastCommit.store(monotonicNanoseconds(), ordering: .relaxed)
    TrackedFile.saveSteps.withLock { $0[file.path] }?(.committed)
  }

  /// When this process's last save of the file was complete on disk, on the monotonic clock; nil before the first.
  var lastSaveCommitted: UInt64? {
    let time = lastCommit.load(ordering: .relaxed)
    return time == 0 ? nil : time
  }

  /// How long the last save took, in nanoseconds (0 before the first): ``saveDelay`` follows it.
  let lastSaveDuration = Atomic<UInt64>(0)

  /// How long after a write its coalesced save runs: twice as long as the last save took, from
  /// ``shortestSaveDelay`` to ``longestSaveDelay``. The promise: a write's save starts within 100 ms of the write, and
  /// the write is on disk when that save ends. Within it, a writer of a large suite, whose every save holds corelibs
  /// (and so the writer) for tens of milliseconds, meets a save for at most a third of its time, instead of close to
  /// half of it with saves every 50 ms.
  var saveDelay: UInt64 {
    min(max(2 * lastSaveDuration.load(ordering: .relaxed), Self.shortestSaveDelay), Self.longestSaveDelay)
  }
  /// The delay of the last save scheduled after a write (tests look at it).
  let lastScheduledDelay = Atomic<UInt64>(0)
  static let shortestSaveDelay: UInt64 = 50_000_000
  static let longestSaveDelay: UInt64 = 100_000_000
  /// Distinct keys written since the last save that trigger a save at once, at least, in a suite
  /// (``SuiteFileRecord/unsavedKeysBeforeSave``).
  static let minimumUnsavedKeysBeforeSave = 256

  /// The persistence of `record`'s file.
  init(record: any FileRecord) {
    self.record = record
    // Before corelibs reads the file: complete a save a crash interrupted, check the file (an unreadable one is kept
    // aside before any save could replace it; one corelibs could crash or hang on is moved away), and make corelibs'
    // copy the file, not an older copy it may hold, recording its stamp: from then on, reads compare it with the
    // file's (``followFile()``) until the suite is watched. Opening a suite that does not exist creates nothing.
    _ = record.open()  // a problem is kept in the record's found issues, replayed to each issue handler
    lookAgainIfRacy()
  }

  deinit {
    SaveOnExit.remove(self)
    watch.withLock { $0 }?.cancel()
  }

  /// Connects the persistence to a hub of its suite.
  func attach(_ hooks: Hooks, for hub: ObjectIdentifier) {
    state.withLock { $0.hooks.append((hub, hooks)) }
  }

  /// Disconnects a hub that is going away.
  func detach(_ hub: ObjectIdentifier) {
    state.withLock { $0.hooks.removeAll { $0.hub == hub } }
  }

  /// The hooks of every hub attached, as one: each is told, `excludingWrites` holds off the writes of all of them
  /// (nested in the order they were attached), and the observers are counted over all. nil when no hub is attached.
  var hooks: Hooks? {
    let attached = state.withLock { $0.hooks.map(\.hooks) }
    guard let first = attached.first else { return nil }
    guard attached.count > 1 else { return first }
    return Hooks(
      refresh: { for hooks in attached { hooks.refresh() } },
      announce: { issue in for hooks in attached { hooks.announce(issue) } },
      excludingWrites: { body in
        func excluding(from index: Int) -> Bool {
          index == attached.count ? body() : attached[index].excludingWrites { excluding(from: index + 1) }
        }
        return excluding(from: 0)
      },
      observerCount: { attached.reduce(0) { $0 + $1.observerCount() } })
  }

  /// The file problems found so far (most recent last, at most 16).
  var foundIssues: [DefaultsError] { record.foundIssues }
}
