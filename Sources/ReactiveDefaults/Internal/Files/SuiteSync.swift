/// The saving and reloading of one file (a file store's everywhere, a suite's plist on Linux) as a state machine
/// with no I/O: the writes not yet saved,
/// the saves running, whether a coalesced save is due, and the reloads file events asked for. Each event is a
/// `mutating` method that returns what to do, named; ``SuitePersistence`` does it once the state's lock is released
/// (the form of swift-async-algorithms' state machines, and of ``WriteGate``). What memory is against the file (the
/// file at a stamp, no file, or untrusted) is ``MemoryOfFile``, kept by ``CorelibsDomain`` (a suite) or
/// ``FileMemory`` (a file store).
///
/// | event | state change | action |
/// |---|---|---|
/// | ``wrote(_:_:saveAfter:)`` | the key is unsaved | ``WriteAction``: none, schedule a save, or save now |
/// | ``saveRequested()`` | a coalesced save is due | ``ScheduleAction``: start its timer, or none (one is due) |
/// | ``timerFired()`` | none is due | ``TimerAction``: save, or none (a save since took every key) |
/// | ``saveBegan()`` | the unsaved keys are taken; one more save runs | the writes to save |
/// | ``saveEnded(unsaved:)`` | one save fewer; failed writes are unsaved | ``SaveEndAction`` |
/// | ``fileChanged()`` | a reload runs, or one more is asked for | ``ReloadAction``: start a reload, or none |
/// | ``reloadFinished()`` | the reload is done, or the one asked for starts | ``ReloadEndAction`` |
struct SuiteSync: Sendable {
  /// Keys written since the last save, with the value each write stored (nil: removed).
  private(set) var unsaved: [PropertyListKey: PropertyListValue?] = [:]
  /// Saves that took their keys and have not finished (a suite's: their keys are still in corelibs' dirty list).
  private(set) var savesInProgress = 0
  /// A coalesced save is due (its timer runs).
  private(set) var saveScheduled = false
  /// Reloads started by file events.
  private(set) var reloads = ReloadPhase.idle

  // MARK: Saving

  /// What a write means for saving.
  enum WriteAction: Equatable {
    case none
    /// The first unsaved write: a save in ``SuitePersistence/saveDelay`` (at most 100 ms), and one at exit.
    case scheduleSave
    /// Enough unsaved keys that a save now is cheaper than letting corelibs' dirty list grow.
    case saveNow

    /// Whether this action asks for more than `other` (several writes in one pass do the most urgent once).
    func isMoreUrgent(than other: Self) -> Bool {
      switch (self, other) {
      case (.saveNow, .saveNow), (.none, _), (.scheduleSave, .scheduleSave), (.scheduleSave, .saveNow): false
      default: true
      }
    }
  }

  /// A write of `key` stored `value` (nil: removed), with `maximum` distinct unsaved keys before a save at once.
  mutating func wrote(_ key: PropertyListKey, _ value: PropertyListValue?, saveAfter maximum: Int) -> WriteAction {
    let first = unsaved.isEmpty
    unsaved.updateValue(value, forKey: key)
    if unsaved.count >= maximum { return .saveNow }
    // The first unsaved write registers for the save at exit, even when a coalesced save is already pending
    // (a `save()` since may have taken the earlier keys and unregistered).
    return first ? .scheduleSave : .none
  }

  /// What asking for a coalesced save does.
  enum ScheduleAction: Equatable {
    /// Start the timer of the coalesced save.
    case startTimer
    /// One is due already.
    case none
  }

  /// A coalesced save is asked for.
  mutating func saveRequested() -> ScheduleAction {
    defer { saveScheduled = true }
    return saveScheduled ? .none : .startTimer
  }

  /// What the coalesced save's timer does.
  enum TimerAction: Equatable {
    case save
    /// A save since (a flush, a reload that saved) took every key: no lock to take.
    case none
  }

  /// The coalesced save's timer fired.
  mutating func timerFired() -> TimerAction {
    saveScheduled = false
    return unsaved.isEmpty ? .none : .save
  }

  /// A save holds the suite's lock and takes the unsaved writes (call ``saveEnded(unsaved:)`` after it, whatever
  /// happened).
  mutating func saveBegan() -> [PropertyListKey: PropertyListValue?] {
    savesInProgress += 1
    defer { unsaved.removeAll() }
    return unsaved
  }

  /// What the end of a save means.
  enum SaveEndAction: Equatable {
    case none
    /// Writes are unsaved again: register for the save at exit.
    case registerForExit
  }

  /// A save that ``saveBegan()`` ended; `failed` holds its writes when it failed (they are unsaved again, behind any
  /// write made since, whose value is the newer one).
  mutating func saveEnded(unsaved failed: [PropertyListKey: PropertyListValue?] = [:]) -> SaveEndAction {
    savesInProgress -= 1
    guard !failed.isEmpty else { return .none }
    unsaved.merge(failed) { newer, _ in newer }
    return .registerForExit
  }

  /// Whether writes of ours are unsaved.
  var hasUnsavedWrites: Bool { !unsaved.isEmpty }

  /// Whether corelibs may hold writes not yet saved: unsaved keys, or keys a save in progress took. Its copy must not
  /// be dropped then.
  var hasPendingWrites: Bool { !unsaved.isEmpty || savesInProgress > 0 }

  /// Whether the one save running may drop corelibs' copy: nothing unsaved and no other save with keys in corelibs'
  /// dirty list.
  var aloneWithNothingUnsaved: Bool { unsaved.isEmpty && savesInProgress == 1 }

  // MARK: Reloading

  /// What a file event does.
  enum ReloadAction: Equatable {
    /// Start a reload (none runs).
    case startReload
    /// One runs: it reloads once more after it.
    case none
  }

  /// The file changed (a file event).
  mutating func fileChanged() -> ReloadAction {
    reloads.requested() ? .startReload : .none
  }

  /// What the end of a reload does.
  enum ReloadEndAction: Equatable {
    /// Events arrived meanwhile: reload once more.
    case reloadAgain
    case idle
  }

  /// A reload that ``fileChanged()`` started finished.
  mutating func reloadFinished() -> ReloadEndAction {
    reloads.finished() ? .reloadAgain : .idle
  }
}

/// The reloads file events start: none running, one running, or one running and another asked for meanwhile.
enum ReloadPhase: Sendable {
  case idle
  case running
  case runningAgain

  /// A file event: true when a reload must start (none runs).
  mutating func requested() -> Bool {
    switch self {
    case .idle:
      self = .running
      return true
    case .running, .runningAgain:
      self = .runningAgain
      return false
    }
  }

  /// A reload finished: true when another must run.
  mutating func finished() -> Bool {
    switch self {
    case .runningAgain:
      self = .running
      return true
    case .idle, .running:
      self = .idle
      return false
    }
  }
}
