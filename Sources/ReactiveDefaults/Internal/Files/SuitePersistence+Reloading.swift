import Foundation
import Synchronization

/// Reloading the suite when its file changes (a file event, a read that finds the file changed,
/// ``DefaultsStore/refresh()``), and the folder watch that brings the events.
extension SuitePersistence {
  /// Reloads the suite from disk if the file is not as this process last saved or loaded it, then has the hub re-read
  /// its observed keys and tell their observers (``refresh()``: also what a plain `UserDefaults` write changed).
  func reload() {
    reload(refreshingAnyway: true)
  }

  /// ``reload()``; with `refreshingAnyway == false` (a file event) the hub is told only when the suite was reloaded,
  /// so that the events of this process's own saves cost a `stat`, not a re-read of every observed key.
  private func reload(refreshingAnyway: Bool) {
    var findings = Findings()
    findings.changedElsewhere = refreshingAnyway
    var reloaded = false
    defer {
      act(on: findings)
      if reloaded { notifyFileWatchers() }
    }
    // The file is as this process last saved or read it (the event was our own save): nothing to reload.
    if record.isSynced { return }
    // The folder is gone (removed while watched): nothing to lock or read. Writes of ours wait for it (the next
    // save creates it); else corelibs' copy is dropped.
    guard file.system.status(file.folder) != nil else {
      findings.changedElsewhere = true
      reloaded = true
      let loaded = { !self.hasPendingWrites && self.record.loadMissingFile() }
      if !(hooks?.excludingWrites(loaded) ?? loaded()) { perform(.scheduleSave) }
      return
    }
    do {
      try record.locked { () throws(SaveFailure) in
        // A save of ours may have finished while this waited for the lock.
        if record.isSynced { return }
        findings.changedElsewhere = true
        reloaded = true
        do throws(DefaultsError) {
          try reloadHoldingLock(&findings)
        } catch {
          findings.issues.append(error)
        }
      }
    } catch {
      // Only the lock can fail here. A file store reads its file without it (a folder this process may only read);
      // a suite's file stays as it is, to be reloaded at its next change.
      if record.readsWithoutTheLock {
        findings.changedElsewhere = true
        reloaded = true
        do throws(DefaultsError) { try reloadHoldingLock(&findings) } catch { findings.issues.append(error) }
      } else {
        findings.issues.append(
          .unreadableFile(path: file.path, reason: "cannot be reloaded: \(error.reason)", backup: nil))
      }
    }
  }

  /// Makes the suite in memory the file as it is now; call it holding the suite's lock. With writes of ours
  /// pending, a save merges the file with them, which is a reload too.
  func reloadHoldingLock(_ findings: inout Findings) throws(DefaultsError) {
    let hooks = hooks
    let reloaded: (issue: DefaultsError?, reloaded: Bool)
    do {
      reloaded = try record.reload { body in
        // With no write in progress and nothing unsaved, memory is only loaded again (corelibs drops its cached
        // copy; if it fails to, it had something to write after all: save instead).
        hooks?.excludingWrites { !self.hasPendingWrites && body() } ?? false
      }
    } catch {
      throw file.failure(error)
    }
    if let issue = reloaded.issue { findings.issues.append(issue) }
    if !reloaded.reloaded { try save(into: &findings) }
    lookAgainIfRacy()
  }

  /// Looks at the file again once its stamp can be trusted, when memory was loaded from a file modified a moment
  /// before (``TrackedFile/noteLoaded(at:)``): a rewrite in place within that moment keeps the stamp, and its event
  /// came while memory still counted as the file. (A read looks again on its own; this is for observers that only
  /// wait.)
  func lookAgainIfRacy() {
    guard record.trustedAfter.load(ordering: .relaxed) != 0 else { return }
    let delay = DispatchTimeInterval.nanoseconds(Int(TrackedFile.racyWindow) + 1_000_000)
    background.asyncAfter(deadline: .now() + delay) { [weak self] in
      guard let self, !self.record.isSynced else { return }
      self.fileChanged()
    }
  }

  /// Reloads at once on a file event (leading edge: another process's save reaches reads and observers without a
  /// fixed delay), off the watcher's thread (a reload waits for the suite's lock, and the watcher serves every suite
  /// of the folder), and coalesces the events that arrive while that reload runs into one more reload after it.
  private func fileChanged() {
    guard state.withLock({ $0.sync.fileChanged() }) == .startReload else { return }
    // The reference is taken anew for each pass: a stream of events must not keep a released suite alive.
    background.async { [weak self] in
      var again = true
      while again, let persistence = self {
        persistence.reload(refreshingAnyway: false)
        again = persistence.state.withLock { $0.sync.reloadFinished() } == .reloadAgain
      }
    }
  }

  /// Makes a read follow the file: at most once a millisecond, a read compares the file's stamp with the one memory
  /// was loaded from (one `lstat`), and reloads on the reading thread if another process changed it. A watched suite
  /// (observers, a tool's watch) is also reloaded by its file events, on a background thread, which is what tells its
  /// observers; the read does not wait for that thread, which a loaded machine may run late. So reads follow the file
  /// within about a millisecond, observed or not, and a process that never observes holds no inotify descriptor
  /// (closing one costs about 5 ms at process exit).
  func followFile() {
    let now = monotonicNanoseconds()
    let last = lastFileCheck.load(ordering: .relaxed)
    guard now &- last >= Self.fileCheckInterval,
      lastFileCheck.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged,
      !record.isSynced
    else { return }
    reload(refreshingAnyway: false)
  }

  /// How often, at most, a read of a suite that is not watched looks at its file (``followFile()``).
  static let fileCheckInterval: UInt64 = 1_000_000

  /// Watches the suite's file while `wanted()` (the hub has observers) or a tool watches the whole file, asked under
  /// the watch's lock, so that a first observer arriving while the last one leaves never ends without a watch. A
  /// watch that begins catches up at once: a save that completed before it began is reloaded too.
  ///
  /// A folder that cannot be watched (it does not exist yet: a file store's folder is made by the first save, here or
  /// in another process) is tried again every ``watchRetryInterval`` while the watch is wanted, and the watch that
  /// then begins catches up with the file.
  func updateWatching(_ wanted: () -> Bool) {
    let file = file
    let (started, ended, failed) = watch.withLock { subscription -> (Bool, FileWatch?, Bool) in
      let wanted = wanted() || state.withLock { !$0.fileWatchers.isEmpty }
      if wanted && subscription == nil {
        subscription = file.system.watch(file.folder, file.fileName) { [weak self] in self?.fileChanged() }
        return (subscription != nil, nil, subscription == nil)
      } else if !wanted, let current = subscription {
        subscription = nil
        return (false, current, false)
      }
      return (false, nil, false)
    }
    ended?.cancel()
    if started && !record.isSynced { fileChanged() }
    if failed {
      background.asyncAfter(deadline: .now() + Self.watchRetryInterval) { [weak self] in
        self?.updateWatching { (self?.hooks?.observerCount() ?? 0) > 0 }
      }
    }
  }

  /// How long a watch of a folder that cannot be watched waits before it tries again (``updateWatching(_:)``).
  static let watchRetryInterval: DispatchTimeInterval = .milliseconds(50)

  /// Calls `onChange` after each reload that found the file changed, until the returned token ends (tools that
  /// watch a whole domain). nil where there is no file watching.
  func watchFile(_ onChange: @escaping @Sendable () -> Void) -> DefaultsObservation? {
    let id = state.withLock { state in
      state.nextFileWatcherID += 1
      state.fileWatchers[state.nextFileWatcherID] = onChange
      return state.nextFileWatcherID
    }
    updateWatching { (hooks?.observerCount() ?? 0) > 0 }
    return DefaultsObservation { [self] in
      _ = state.withLock { $0.fileWatchers.removeValue(forKey: id) }
      updateWatching { (hooks?.observerCount() ?? 0) > 0 }
    }
  }

  private func notifyFileWatchers() {
    for onChange in state.withLock({ Array($0.fileWatchers.values) }) { onChange() }
  }
}
