import Foundation
import Testing

@testable import ReactiveDefaults

/// The decisions of a suite's save, driven with no file, no corelibs and no lock (``SuiteSave``): what the commit does
/// with what corelibs' save left, how often the file is read again while it changes, and what memory and the observers
/// are told after. Each row names the situation of a real save it stands for; the tests of real saves
/// (`SynchronizeDuringSaveTests`, `WritesDuringASaveTests`, `TransactionTests`) produce those situations on disk.
@Suite struct SuiteSaveTests {
  typealias Stamp = SuiteFile.Stamp
  static let s1 = Stamp(size: 10, modified: 1, modifiedNanoseconds: 2, inode: 3)
  static let s2 = Stamp(size: 10, modified: 1, modifiedNanoseconds: 5, inode: 3)
  static let s3 = Stamp(size: 11, modified: 2, modifiedNanoseconds: 7, inode: 3)

  static func entries(_ pairs: KeyValuePairs<String, Int>) -> SuiteSave.Entries {
    Dictionary(
      uniqueKeysWithValues: pairs.map { (PropertyListKey($0.key), PropertyListValue.integer(Int128($0.value))) })
  }

  /// Writes of ours: a value, or nil for a removal.
  static func writes(_ pairs: KeyValuePairs<String, Int?>) -> SuiteSave.Writes {
    Dictionary(uniqueKeysWithValues: pairs.map { (PropertyListKey($0.key), $0.value.map { .integer(Int128($0)) }) })
  }

  static func encoded(_ pairs: KeyValuePairs<String, Int>) -> Data { SuiteFile.encode(entries(pairs)) }

  // MARK: decide

  struct DecideRow: Sendable, CustomTestStringConvertible {
    var situation: String
    var corelibsSaved = true
    var readBack: SuiteFile.SavedContents
    var restamped: Stamp?
    var journal: SuiteSave.Entries
    var newest: SuiteSave.Writes
    var expected: SuiteSave.Decision
    var testDescription: String { situation }
  }

  static let decideRows: [DecideRow] = [
    DecideRow(
      situation: "the usual save: corelibs wrote the journal's content, restamped: kept",
      readBack: .same, restamped: s2, journal: entries(["a": 1]), newest: writes(["a": 1]),
      expected: .keep(.journalContent, stamp: s2)),
    DecideRow(
      situation: "the journal's content, not restamped (the restamp failed on it): the journal is renamed",
      readBack: .same, restamped: nil, journal: entries(["a": 1]), newest: writes(["a": 1]),
      expected: .renameJournal),
    DecideRow(
      situation: "a newer write of ours, saved by corelibs and restamped: corelibs' file is kept",
      readBack: .different(encoded(["a": 1, "k": 3])), restamped: s2, journal: entries(["a": 1, "k": 2]),
      newest: writes(["a": 1, "k": 3]), expected: .keep(.corelibsContent(encoded(["a": 1, "k": 3])), stamp: s2)),
    DecideRow(
      situation: "a plain UserDefaults write saved by corelibs, not restamped: merged, a change no write explains",
      readBack: .different(encoded(["a": 1, "b": 2])), restamped: nil, journal: entries(["a": 1]),
      newest: writes(["a": 1]),
      expected: .merge(.init(content: encoded(["a": 1, "b": 2]), copyIsStale: false, foreignChange: true))),
    DecideRow(
      situation: "a removal corelibs did not record: merged without the key, and corelibs' copy is stale",
      readBack: .different(encoded(["a": 1, "k": 7])), restamped: nil, journal: entries(["a": 1]),
      newest: writes(["a": 1, "k": nil]),
      expected: .merge(.init(content: encoded(["a": 1]), copyIsStale: true, foreignChange: false))),
    DecideRow(
      situation: "a plain rm after the check: corelibs saved only its dirty keys into the missing file",
      readBack: .different(encoded(["a": 1])), restamped: nil, journal: entries(["a": 1, "x": 5]),
      newest: writes(["a": 1]),
      expected: .merge(.init(content: encoded(["a": 1]), copyIsStale: false, foreignChange: true))),
    DecideRow(
      situation: "a newer write of ours, not restamped: merged, nothing foreign",
      readBack: .different(encoded(["k": 3])), restamped: nil, journal: entries(["k": 2]), newest: writes(["k": 3]),
      expected: .merge(.init(content: encoded(["k": 3]), copyIsStale: false, foreignChange: false))),
    DecideRow(
      situation: "corelibs' file cannot be parsed (a whole frame, bad inside): the journal takes corelibs' memory",
      readBack: .different(Data("garbage".utf8)), restamped: nil, journal: entries(["a": 1]),
      newest: writes(["a": 1]), expected: .renameWithMemory),
    DecideRow(
      situation: "corelibs' file holds no domain at all: the journal takes corelibs' memory",
      readBack: .different(Data()), restamped: nil, journal: entries(["a": 1]), newest: writes(["a": 1]),
      expected: .renameWithMemory),
    DecideRow(
      situation: "another process removed the file during the save: a removal the observers hear",
      readBack: .absent, restamped: nil, journal: entries(["a": 1]), newest: writes(["a": 1]),
      expected: .absent(removedElsewhere: true)),
    DecideRow(
      situation: "corelibs removed the file of a domain it holds empty: nothing to hear",
      readBack: .absent, restamped: nil, journal: [:], newest: writes(["a": nil]),
      expected: .absent(removedElsewhere: false)),
    DecideRow(
      situation: "corelibs saved, its file unreadable: the journal takes corelibs' memory",
      readBack: .unreadable, restamped: nil, journal: entries(["a": 1]), newest: writes(["a": 1]),
      expected: .renameWithMemory),
    DecideRow(
      situation: "corelibs' save failed: the journal replaces its file",
      corelibsSaved: false, readBack: .unreadable, restamped: nil, journal: entries(["a": 1]),
      newest: writes(["a": 1]), expected: .renameJournal),
    DecideRow(
      situation: "a kept file is not compared while writes wait (its foreign change is found after the flush)",
      readBack: .different(encoded(["a": 1])), restamped: s2, journal: entries(["a": 1, "x": 5]),
      newest: writes(["a": 1]), expected: .keep(.corelibsContent(encoded(["a": 1])), stamp: s2)),
  ]

  @Test(arguments: decideRows) func decide(_ row: DecideRow) {
    let decision = SuiteSave.decide(
      corelibsSaved: row.corelibsSaved, readBack: row.readBack, restamped: row.restamped, journal: row.journal,
      newest: row.newest)
    #expect(decision == row.expected)
  }

  /// A domain differs from the journal only in what no write of ours names: unknown differs; a key a write names
  /// never counts; a key of the journal missing from the domain, or another value, does.
  @Test func differsFromJournal() {
    let journal = Self.entries(["a": 1, "b": 2])
    #expect(SuiteSave.differsFromJournal(nil, journal: journal, newest: [:]))
    let rewritten = Self.entries(["a": 9, "b": 2])
    #expect(!SuiteSave.differsFromJournal(rewritten, journal: journal, newest: Self.writes(["a": 9])))
    #expect(SuiteSave.differsFromJournal(Self.entries(["a": 1]), journal: journal, newest: Self.writes(["a": 1])))
    #expect(SuiteSave.differsFromJournal(Self.entries(["a": 1, "b": 3]), journal: journal, newest: [:]))
    #expect(SuiteSave.differsFromJournal(Self.entries(["a": 1, "b": 2, "c": 0]), journal: journal, newest: [:]))
    #expect(!SuiteSave.differsFromJournal(Self.entries(["a": 1, "b": 2]), journal: journal, newest: [:]))
    #expect(!SuiteSave.differsFromJournal(Self.entries(["b": 2]), journal: journal, newest: Self.writes(["a": nil])))
  }

  // MARK: KeepAttempts

  typealias Attempts = SuiteSave.KeepAttempts

  /// The first attempt keeps the journal's content, once restamped.
  @Test func theUsualSaveIsKeptAtTheFirstAttempt() {
    var attempts = Attempts(readBack: .same, stamp: Self.s1)
    #expect(attempts.start() == .restamp(expected: Self.s1))
    #expect(attempts.restamped(Self.s2) == .decide(.same, restamped: Self.s2))
  }

  /// No stamp (the file was gone when stamped): nothing to restamp.
  @Test func noStampIsDecidedUnstamped() {
    var attempts = Attempts(readBack: .same, stamp: nil)
    #expect(attempts.start() == .decide(.same, restamped: nil))
  }

  /// corelibs' file differs: whether its copy holds every write of ours is asked first, even with no stamp.
  @Test func corelibsIsAskedBeforeTheStampIsLookedAt() {
    let data = Self.encoded(["a": 1])
    var lacking = Attempts(readBack: .different(data), stamp: Self.s1)
    #expect(lacking.start() == .askWhetherCorelibsHoldsNewest)
    #expect(lacking.corelibsHoldsNewest(false) == .decide(.different(data), restamped: nil))
    var unstamped = Attempts(readBack: .different(data), stamp: nil)
    #expect(unstamped.start() == .askWhetherCorelibsHoldsNewest)
    #expect(unstamped.corelibsHoldsNewest(true) == .decide(.different(data), restamped: nil))
  }

  /// A restamp that failed on the very file read back goes the rename way; one that found another file reads again,
  /// and the file written in place since (by a plain synchronize on another thread) is kept.
  @Test func aFileRewrittenAfterTheReadBackIsReadAgain() {
    var same = Attempts(readBack: .same, stamp: Self.s1)
    _ = same.start()
    #expect(same.restampFailed(stampNow: Self.s1) == .decide(.same, restamped: nil))

    let data = Self.encoded(["a": 4])
    var rewritten = Attempts(readBack: .same, stamp: Self.s1)
    _ = rewritten.start()
    #expect(rewritten.restampFailed(stampNow: Self.s2) == .readAgain)
    #expect(rewritten.readAgain(.different(data), stamp: Self.s2) == .askWhetherCorelibsHoldsNewest)
    #expect(rewritten.corelibsHoldsNewest(true) == .restamp(expected: Self.s2))
    #expect(rewritten.restamped(Self.s3) == .decide(.different(data), restamped: Self.s3))
  }

  /// A file that keeps changing is read again at most three times; the last read is decided unstamped, with no
  /// restamp asked.
  @Test func aFileThatKeepsChangingIsDecidedUnstampedAfterThreeAttempts() {
    var attempts = Attempts(readBack: .same, stamp: Self.s1)
    var step = attempts.start()
    var restamps = 0
    for round in 0..<10 {
      guard case .restamp = step else { break }
      restamps += 1
      #expect(attempts.restampFailed(stampNow: round.isMultiple(of: 2) ? Self.s2 : Self.s3) == .readAgain)
      step = attempts.readAgain(.same, stamp: round.isMultiple(of: 2) ? Self.s2 : Self.s3)
    }
    #expect(restamps == Attempts.attempts)
    #expect(step == .decide(.same, restamped: nil))
  }

  /// A plain `rm` right after the read-back: the file read again is absent, decided at once.
  @Test func aFileRemovedAfterTheReadBackIsDecidedAbsent() {
    var attempts = Attempts(readBack: .same, stamp: Self.s1)
    _ = attempts.start()
    #expect(attempts.restampFailed(stampNow: nil) == .readAgain)
    #expect(attempts.readAgain(.absent, stamp: nil) == .decide(.absent, restamped: nil))
  }

  @Test(arguments: [SuiteFile.SavedContents.unreadable, .absent])
  func nothingToKeepIsDecidedAtOnce(_ readBack: SuiteFile.SavedContents) {
    var attempts = Attempts(readBack: readBack, stamp: Self.s1)
    #expect(attempts.start() == .decide(readBack, restamped: nil))
  }

  // MARK: synchronizesAgain

  @Test func corelibsSavesAgainOnlyAfterItSavedAnotherFile() {
    let again = SuiteSave.synchronizesAgain
    #expect(!again(true, false, Self.s1, Self.s1))
    #expect(again(true, true, Self.s1, Self.s1))
    #expect(again(true, false, Self.s2, Self.s1))
    #expect(again(true, false, nil, Self.s1))
    #expect(!again(false, true, Self.s2, Self.s1))
  }

  // MARK: The finish

  static func save(
    journal: SuiteSave.Entries = [:], newest: SuiteSave.Writes = [:], changedElsewhere: Bool = false,
    corelibsSaved: Bool = true, left: SuiteSave.Left = .nothing
  ) -> SuiteSave {
    var check = TrackedFile.Check()
    check.changedElsewhere = changedElsewhere
    var save = SuiteSave(writes: newest, check: check, stamp: s1)
    save.journal = journal
    save.newest = newest
    save.corelibsSaved = corelibsSaved
    save.left = left
    return save
  }

  /// A kept file holding the journal's content is the journal, with nothing foreign in it.
  @Test func aKeptJournalIsTheJournal() {
    var save = Self.save(
      journal: Self.entries(["a": 1]), newest: Self.writes(["a": 1]), left: .kept(.journalContent, stamp: Self.s2))
    save.keptFileFlushed(true)
    #expect(save.left == .file(stamp: Self.s2, entries: Self.entries(["a": 1])))
    #expect(!save.foreignChange && !save.outcome.changedElsewhere)
  }

  /// A kept corelibs' file is parsed after the flush: newer writes of ours are nothing foreign; a plain write of the
  /// process, or a file that cannot be parsed, is.
  @Test func aKeptCorelibsFileIsComparedAfterItsFlush() {
    let newer = Self.encoded(["a": 1, "k": 3])
    var ours = Self.save(
      journal: Self.entries(["a": 1, "k": 2]), newest: Self.writes(["a": 1, "k": 3]),
      left: .kept(.corelibsContent(newer), stamp: Self.s2))
    ours.keptFileFlushed(true)
    #expect(ours.left == .file(stamp: Self.s2, entries: Self.entries(["a": 1, "k": 3])))
    #expect(!ours.foreignChange)

    var plain = Self.save(
      journal: Self.entries(["a": 2, "other": 2]), newest: Self.writes(["a": 2]),
      left: .kept(.corelibsContent(Self.encoded(["a": 2, "other": 4])), stamp: Self.s2))
    plain.keptFileFlushed(true)
    #expect(plain.foreignChange && plain.outcome.changedElsewhere)

    var garbage = Self.save(
      journal: Self.entries(["a": 1]), newest: Self.writes(["a": 1]),
      left: .kept(.corelibsContent(Data("garbage".utf8)), stamp: Self.s2))
    garbage.keptFileFlushed(true)
    #expect(garbage.left == .file(stamp: Self.s2, entries: nil))
    #expect(garbage.foreignChange)
  }

  /// A kept file gone by its flush (a plain `rm` after the restamp): a removal, which the observers hear.
  @Test func aKeptFileGoneByItsFlushIsARemoval() {
    var save = Self.save(journal: Self.entries(["a": 1]), left: .kept(.journalContent, stamp: Self.s2))
    save.keptFileFlushed(false)
    #expect(save.left == .noFile)
    #expect(save.removedElsewhere && save.outcome.changedElsewhere)
    #expect(save.memoryAfterSave(copyDropped: nil) == .synced(stamp: nil, entries: nil))
  }

  /// A stale copy of corelibs' that could not be dropped is untrusted; dropped, memory is the file.
  @Test func aStaleCopyIsTrustedOnlyOnceDropped() {
    var save = Self.save(left: .file(stamp: Self.s1, entries: nil))
    save.copyIsStale = true
    #expect(save.memoryAfterSave(copyDropped: false) == .untrusted)
    #expect(save.memoryAfterSave(copyDropped: nil) == .untrusted)
    #expect(save.memoryAfterSave(copyDropped: true) == .synced(stamp: Self.s1, entries: nil))
    #expect(save.outcome.changedElsewhere)
  }

  /// corelibs' save failed after another process changed the file: its copy lacks that change, untrusted. Had it
  /// saved, its copy is the merged file.
  @Test func aCopyThatMissedAnotherProcessesChangeIsUntrusted() {
    let failed = Self.save(changedElsewhere: true, corelibsSaved: false, left: .file(stamp: Self.s1, entries: nil))
    #expect(failed.memoryAfterSave(copyDropped: nil) == .untrusted)
    #expect(failed.outcome.changedElsewhere)
    let merged = Self.save(changedElsewhere: true, left: .file(stamp: Self.s1, entries: nil))
    #expect(merged.memoryAfterSave(copyDropped: nil) == .synced(stamp: Self.s1, entries: nil))
    let quiet = Self.save(corelibsSaved: false, left: .file(stamp: Self.s1, entries: Self.entries(["a": 1])))
    #expect(quiet.memoryAfterSave(copyDropped: nil) == .synced(stamp: Self.s1, entries: Self.entries(["a": 1])))
    #expect(!quiet.outcome.changedElsewhere)
  }

  /// Each finding alone reaches the observers; a save that found none tells them nothing.
  @Test func eachFindingAloneReachesTheObservers() {
    #expect(!Self.save().outcome.changedElsewhere)
    #expect(Self.save(changedElsewhere: true).outcome.changedElsewhere)
    var foreign = Self.save()
    foreign.foreignChange = true
    #expect(foreign.outcome.changedElsewhere)
    var removed = Self.save()
    removed.removedElsewhere = true
    #expect(removed.outcome.changedElsewhere)
    var stale = Self.save()
    stale.copyIsStale = true
    #expect(stale.outcome.changedElsewhere)
  }
}
