import Foundation

/// One save of a suite's file as values: what each step found, handed to the next, and the decisions between the
/// steps as functions of those values alone (no file, no corelibs, no lock: `SuiteSaveTests` drive them as tables, as
/// `SuiteSyncTests` drive ``SuiteSync``). The steps are ``SuiteFileRecord``'s (SuiteFileRecord+Saving.swift);
/// ``SuitePersistence`` runs them in order (SuitePersistence+SuiteSave.swift), holding the suite's lock throughout,
/// and its hubs' write gates from corelibs' save to the commit.
///
/// | step | held (besides the suite lock) | sets |
/// |---|---|---|
/// | `beginSave(writes:)` | | `writes`, `check`, `stamp` |
/// | `gatherEntries(_:)` | | `source`, `journal` |
/// | `applyWritesMadeSince(_:)` (source `.corelibs` only) | | `journal` |
/// | `writeJournal(_:)` | | `journalBytes` (the journal written and flushed) |
/// | `saveWithCorelibs(_:)` | write gates | `corelibsSaved`, `readBack`, `readBackStamp` |
/// | (SuitePersistence) | write gates | `newest` |
/// | `commit(_:)` (``KeepAttempts``, then `decide`) | write gates | `left`, `copyIsStale`, `foreignChange`, … |
/// | `flushKeptFile(_:)` (``keptFileFlushed(_:)``) | | `left`, `foreignChange`, `removedElsewhere` |
/// | (SuitePersistence) the copy dropped, when `copyIsStale` | write gates | |
/// | `finishSave(_:copyDropped:)` (``memoryAfterSave(copyDropped:)``, ``outcome``) | | corelibs' copy recorded |
struct SuiteSave {
  typealias Entries = [PropertyListKey: PropertyListValue]
  /// Writes of ours, each key's newest stored value (nil: removed).
  typealias Writes = [PropertyListKey: PropertyListValue?]
  typealias Stamp = SuiteFile.Stamp

  // MARK: Prepared (suite lock)

  /// The writes this save took, once the suite's lock was held.
  let writes: Writes
  /// What the check found, and the file's stamp the save works from (``FileRecord/checkThenStamp()``).
  let check: TrackedFile.Check
  let stamp: Stamp?

  /// Where the journal's entries came from (the raw value is the trace's word).
  enum Source: String {
    /// The file as this process last saved or parsed it.
    case known
    /// corelibs' copy, which is that file plus the unsaved writes.
    case corelibs
    /// The file, read.
    case disk
  }
  /// `.disk` until `gatherEntries` succeeds otherwise: a failed copy of corelibs' domain is traced "from disk".
  var source = Source.disk
  /// What this save means the file to hold (the journal), and its bytes.
  var journal: Entries = [:]
  var journalBytes = Data()

  /// corelibs' domain misses nothing of ours only with the writes made since the writes were taken applied over it,
  /// read after the domain was copied: a write in between is in one or the other.
  var needsWritesMadeSince: Bool { source == .corelibs }

  /// Applies the writes made since the writes were taken (newer values, for a key written again) to the journal.
  mutating func applyWritesMadeSince(_ since: Writes) {
    for (key, value) in since { journal[key] = value }
  }

  // MARK: corelibs' save (suite lock + gates)

  var corelibsSaved = false
  /// corelibs' file read back after its save (`.unreadable` when its save failed: then it is not read), and the
  /// file's stamp, taken before the read.
  var readBack = SuiteFile.SavedContents.unreadable
  var readBackStamp: Stamp?
  /// Every write of ours up to corelibs' save: this save's, and the newer ones made since it took them (read while no
  /// write runs).
  var newest: Writes = [:]
  /// For ``SuiteFile/saveTrace`` only.
  var corelibsResult: String?

  // MARK: Committed

  /// What the file is after the commit.
  enum Left: Equatable {
    /// Nothing committed (yet).
    case nothing
    /// The file at `stamp` (nil: no file) holds `entries` (nil: not parsed; the next save copies corelibs' domain or
    /// reads the file).
    case file(stamp: Stamp?, entries: Entries?)
    /// corelibs' file, restamped at `stamp`, stays; it is not flushed yet, and the journal is still beside it.
    case kept(KeptFile, stamp: Stamp)

    static let noFile = Left.file(stamp: nil, entries: nil)
  }

  /// What a kept corelibs' file holds.
  enum KeptFile: Equatable, Sendable {
    /// Byte for byte the journal: `journal` describes it.
    case journalContent
    /// These bytes: more than the journal (writes of ours made since, plain `UserDefaults` writes).
    case corelibsContent(Data)
  }

  var left = Left.nothing
  /// The file holds what corelibs' copy lacks: the copy must go (``memoryAfterSave(copyDropped:)``).
  var copyIsStale = false
  /// The file the save leaves differs from the journal in a key no write of ours explains: corelibs' save merged a
  /// change another writer made during this save (a plain `rm` after the check: corelibs saved its dirty keys into the
  /// missing file), or a plain `UserDefaults` write of this process. Either way reads give it, and observers must
  /// hear of it, not only reads.
  var foreignChange = false
  /// The file was removed during the save: memory follows, and the observers of the keys it held hear of it.
  var removedElsewhere = false
  /// A plain `UserDefaults` write of this process came after a write of ours, and the save keeps it in its place
  /// (``CorelibsDomain/withLaterPlainWrites(_:)``): observers, who heard ours, must hear of it.
  var keepsLaterPlainWrites = false

  init(writes: Writes, check: TrackedFile.Check, stamp: Stamp?) {
    self.writes = writes
    self.check = check
    self.stamp = stamp
  }
}

// MARK: - Decisions

extension SuiteSave {
  /// corelibs saves once more when the file it reloaded is another than the one its copy was loaded from
  /// (``SuiteFileRecord/saveWithCorelibs(_:)`` says why).
  static func synchronizesAgain(
    corelibsSaved: Bool, changedElsewhere: Bool, stampBeforeSave: Stamp?, stamp: Stamp?
  ) -> Bool {
    corelibsSaved && (changedElsewhere || stampBeforeSave != stamp)
  }

  /// Whether corelibs' file may be kept, tried while it changes: it must hold every write of ours (be the journal's
  /// content, or corelibs' copy holds `newest`), and be stamped to the nanosecond while it is still the file read
  /// back. A file that changed since the read-back is read again, at most three times; the last read is decided as it
  /// is, unstamped. The caller does what each step asks and reports what it found.
  struct KeepAttempts {
    enum Step: Equatable {
      /// Ask whether corelibs' copy holds `newest`, then report it to ``corelibsHoldsNewest(_:)``.
      case askWhetherCorelibsHoldsNewest
      /// Restamp the file if it is still the one stamped `expected`: then ``restamped(_:)``, or
      /// ``restampFailed(stampNow:)`` with the file's stamp right after.
      case restamp(expected: Stamp)
      /// Take the file's stamp, read the file back again, then ``readAgain(_:stamp:)``.
      case readAgain
      /// Decide on this read-back (``SuiteSave/decide(corelibsSaved:readBack:restamped:journal:newest:)``).
      case decide(SuiteFile.SavedContents, restamped: Stamp?)
    }

    static let attempts = 3
    private(set) var readBack: SuiteFile.SavedContents
    private(set) var stamp: Stamp?
    private var attempted = 0

    init(readBack: SuiteFile.SavedContents, stamp: Stamp?) {
      self.readBack = readBack
      self.stamp = stamp
    }

    mutating func start() -> Step { attempt() }

    private mutating func attempt() -> Step {
      guard attempted < Self.attempts else { return .decide(readBack, restamped: nil) }
      attempted += 1
      switch readBack {
      case .same: return holding(true)
      // Asked even when there is no stamp to restamp: whether corelibs holds the writes comes first.
      case .different: return .askWhetherCorelibsHoldsNewest
      case .absent, .unreadable: return .decide(readBack, restamped: nil)
      }
    }

    private func holding(_ holds: Bool) -> Step {
      guard holds, let stamp else { return .decide(readBack, restamped: nil) }
      return .restamp(expected: stamp)
    }

    mutating func corelibsHoldsNewest(_ holds: Bool) -> Step { holding(holds) }

    mutating func restamped(_ stamp: Stamp) -> Step { .decide(readBack, restamped: stamp) }

    /// The restamp found another file, or failed. The same file as read back (the restamp failed on it): decided
    /// unstamped. Another: read again.
    mutating func restampFailed(stampNow: Stamp?) -> Step {
      stampNow == stamp ? .decide(readBack, restamped: nil) : .readAgain
    }

    mutating func readAgain(_ contents: SuiteFile.SavedContents, stamp: Stamp?) -> Step {
      readBack = contents
      self.stamp = stamp
      return attempt()
    }
  }

  /// What the commit does.
  enum Decision: Equatable, Sendable {
    /// corelibs' file stays (it holds every write of ours, and is stamped `stamp`); the journal goes once it is
    /// flushed.
    case keep(KeptFile, stamp: Stamp)
    /// corelibs' file lacks a write of ours: the journal takes its content with `newest` over it, and is renamed.
    case merge(Merge)
    /// corelibs' file cannot be parsed, or read back after it saved: the journal takes corelibs' memory (when that can
    /// be copied and fits), and is renamed.
    case renameWithMemory
    /// The journal is renamed over the plist as it is.
    case renameJournal
    /// No file after corelibs' save: the journal goes; `removedElsewhere` when the journal held keys.
    case absent(removedElsewhere: Bool)
  }

  /// A merge of corelibs' file and the writes of ours it lacks.
  struct Merge: Equatable, Sendable {
    var content: Data
    /// The merged file holds what corelibs' copy lacks.
    var copyIsStale: Bool
    /// corelibs' file differed from the journal in a key no write of ours names.
    var foreignChange: Bool
  }

  /// The commit, from the last read-back and the restamp.
  static func decide(
    corelibsSaved: Bool, readBack: SuiteFile.SavedContents, restamped: Stamp?, journal: Entries, newest: Writes
  ) -> Decision {
    switch readBack {
    case .same:
      guard let restamped else { return .renameJournal }
      return .keep(.journalContent, stamp: restamped)
    case .different(let written):
      if let restamped { return .keep(.corelibsContent(written), stamp: restamped) }
      // Parsed only here, while writes wait: a kept file is parsed once they run again (``keptFileFlushed(_:)``).
      guard var merged = try? SuiteFile.parseDomain(written) else { return .renameWithMemory }
      let foreignChange = differsFromJournal(merged, journal: journal, newest: newest)
      for (key, value) in newest { merged[key] = value }
      let content = SuiteFile.encode(merged)
      return .merge(Merge(content: content, copyIsStale: content != written, foreignChange: foreignChange))
    case .absent:
      return .absent(removedElsewhere: !journal.isEmpty)
    case .unreadable:
      return corelibsSaved ? .renameWithMemory : .renameJournal
    }
  }

  /// Whether `domain` (nil: unknown) differs from the journal in a key no write of ours names.
  static func differsFromJournal(_ domain: Entries?, journal: Entries, newest: Writes) -> Bool {
    guard let domain else { return true }
    for (key, value) in domain where newest.index(forKey: key) == nil && journal[key] != value { return true }
    return journal.keys.contains { newest.index(forKey: $0) == nil && domain[$0] == nil }
  }

  /// The kept file was flushed (`flushed`), or found gone: a writer that takes no lock (a plain `rm`) removed it
  /// since the restamp. The save happened, then the removal, which memory and the observers follow.
  mutating func keptFileFlushed(_ flushed: Bool) {
    guard case .kept(let kept, let stamp) = left else { return }
    guard flushed else {
      left = .noFile
      removedElsewhere = true
      return
    }
    switch kept {
    case .journalContent:
      left = .file(stamp: stamp, entries: journal)
    case .corelibsContent(let written):
      // Parsed now, while writes run: the next save applies its writes to these entries instead of copying
      // corelibs' whole domain under corelibs' lock, which the suite's writers wait for.
      let entries = try? SuiteFile.parseDomain(written)
      left = .file(stamp: stamp, entries: entries)
      foreignChange = Self.differsFromJournal(entries, journal: journal, newest: newest)
    }
  }

  /// What corelibs' copy is, once loaded again after the save.
  enum Memory: Equatable {
    /// The file at `stamp`, holding `entries` (``SuiteFileRecord/markSynced(at:entries:)``).
    case synced(stamp: Stamp?, entries: Entries?)
    /// Not to be trusted by the next edit or reload.
    case untrusted
  }

  /// What corelibs' copy is once it is loaded again. `copyDropped`: whether a stale copy could be dropped (nil: it
  /// was not stale, and not asked to go).
  func memoryAfterSave(copyDropped: Bool?) -> Memory {
    // A stale copy kept (a write of ours ran, or corelibs would have saved it): the next edit or reload replaces it.
    if copyIsStale && copyDropped != true { return .untrusted }
    // corelibs kept its copy, which lacks the other process's changes.
    guard corelibsSaved || !check.changedElsewhere else { return .untrusted }
    switch left {
    case .file(let stamp, let entries): return .synced(stamp: stamp, entries: entries)
    // Not reached: a save that commits nothing throws, and a kept file is flushed first.
    case .nothing: return .untrusted
    case .kept: return .untrusted
    }
  }

  /// What the save tells its caller: observers hear of a change made elsewhere, of a removal during the save, of a
  /// merged file corelibs' copy lacked, and of a change no write of ours explains. A journal taken from corelibs'
  /// copy (``Source/corelibs``) may hold plain `UserDefaults` writes of this process that the file lacked, which
  /// nothing else here would tell apart (the file was loaded, not parsed): observers hear of it too (a re-read of
  /// the observed keys; the next save works from the file as this one wrote it).
  var outcome: SaveOutcome {
    SaveOutcome(
      issue: check.issue,
      changedElsewhere: check.changedElsewhere || removedElsewhere || copyIsStale || foreignChange
        || keepsLaterPlainWrites || source == .corelibs)
  }
}
