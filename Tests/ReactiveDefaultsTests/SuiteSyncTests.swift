import Testing

@testable import ReactiveDefaults

/// The suite file's saving and reloading state machine, driven with no file at all: each event's action, in the
/// orders a store produces (writes during a save, a failed save beside newer writes, file events during a reload).
@Suite struct SuiteSyncTests {
  private let a: PropertyListKey = "a"
  private let b: PropertyListKey = "b"

  /// The first unsaved write schedules a save; later ones do nothing; the unsaved count reaching the maximum saves
  /// at once; after a save took every key, the next write schedules again.
  @Test func writesScheduleOnceAndSaveAtTheMaximum() {
    var sync = SuiteSync()
    #expect(sync.wrote(a, .integer(1), saveAfter: 3) == .scheduleSave)
    #expect(sync.wrote(a, .integer(2), saveAfter: 3) == .none)
    #expect(sync.wrote(b, nil, saveAfter: 3) == .none)
    #expect(sync.wrote("c", .integer(3), saveAfter: 3) == .saveNow)
    let taken = sync.saveBegan()
    #expect(taken.count == 3 && taken[a] == .some(.integer(2)) && taken[b] == .some(nil))
    #expect(!sync.hasUnsavedWrites && sync.hasPendingWrites)
    #expect(sync.saveEnded() == .none)
    #expect(!sync.hasPendingWrites)
    #expect(sync.wrote(a, .integer(4), saveAfter: 3) == .scheduleSave)
  }

  /// One timer for any number of requests; a timer that fires after a save took every key does nothing.
  @Test func oneTimerAndNothingToDoAfterAFlush() {
    var sync = SuiteSync()
    _ = sync.wrote(a, .integer(1), saveAfter: 10)
    #expect(sync.saveRequested() == .startTimer)
    #expect(sync.saveRequested() == .none)
    _ = sync.saveBegan()
    _ = sync.saveEnded()
    #expect(sync.timerFired() == .none)
    #expect(sync.saveRequested() == .startTimer)
    _ = sync.wrote(a, .integer(2), saveAfter: 10)
    #expect(sync.timerFired() == .save)
  }

  /// A failed save's writes are unsaved again, behind a newer write of the same key; the save at exit must then
  /// register again.
  @Test func aFailedSaveKeepsItsWritesBehindNewerOnes() {
    var sync = SuiteSync()
    _ = sync.wrote(a, .integer(1), saveAfter: 10)
    _ = sync.wrote(b, .integer(1), saveAfter: 10)
    let taken = sync.saveBegan()
    _ = sync.wrote(a, .integer(2), saveAfter: 10)
    #expect(sync.saveEnded(unsaved: taken) == .registerForExit)
    #expect(sync.unsaved[a] == .some(.integer(2)))
    #expect(sync.unsaved[b] == .some(.integer(1)))
    #expect(sync.savesInProgress == 0)
  }

  /// corelibs' copy may be dropped by a save only when it is the one save running and nothing is unsaved.
  @Test func aSaveDropsTheCopyOnlyAloneWithNothingUnsaved() {
    var sync = SuiteSync()
    _ = sync.wrote(a, .integer(1), saveAfter: 10)
    _ = sync.saveBegan()
    #expect(sync.aloneWithNothingUnsaved)
    _ = sync.wrote(b, .integer(1), saveAfter: 10)
    #expect(!sync.aloneWithNothingUnsaved)
    _ = sync.saveBegan()
    #expect(!sync.aloneWithNothingUnsaved)  // nothing unsaved, but two saves run: the other's keys are unsaved
    _ = sync.saveEnded()
    #expect(sync.aloneWithNothingUnsaved)
    _ = sync.saveEnded()
    #expect(!sync.hasPendingWrites)
  }

  /// File events while a reload runs ask for one more reload after it, however many arrive; then it goes idle.
  @Test func eventsDuringAReloadCoalesceIntoOneMore() {
    var sync = SuiteSync()
    #expect(sync.fileChanged() == .startReload)
    #expect(sync.fileChanged() == .none)
    #expect(sync.fileChanged() == .none)
    #expect(sync.reloadFinished() == .reloadAgain)
    #expect(sync.reloadFinished() == .idle)
    #expect(sync.fileChanged() == .startReload)
    #expect(sync.reloadFinished() == .idle)
  }

  /// What corelibs' copy is: the file at a stamp, no file, or untrusted, which no stamp matches.
  @Test func memoryIsTheFileOnlyAtItsStamp() {
    let stamp = SuiteFile.Stamp(size: 10, modified: 1, modifiedNanoseconds: 2, inode: 3)
    var other = stamp
    other.modifiedNanoseconds += 1
    #expect(CorelibsDomain.Memory(loadedAt: stamp).isFile(stamp))
    #expect(!CorelibsDomain.Memory(loadedAt: stamp).isFile(other))
    #expect(!CorelibsDomain.Memory(loadedAt: stamp).isFile(nil))
    #expect(CorelibsDomain.Memory(loadedAt: nil).isFile(nil))
    #expect(!CorelibsDomain.Memory.untrusted.isFile(nil))
    #expect(!CorelibsDomain.Memory.untrusted.isFile(stamp))
  }

  /// The most urgent of several writes' actions wins.
  @Test func theMostUrgentWriteActionWins() {
    typealias Action = SuiteSync.WriteAction
    #expect(Action.saveNow.isMoreUrgent(than: .scheduleSave))
    #expect(Action.saveNow.isMoreUrgent(than: .none))
    #expect(Action.scheduleSave.isMoreUrgent(than: .none))
    #expect(!Action.scheduleSave.isMoreUrgent(than: .saveNow))
    #expect(!Action.none.isMoreUrgent(than: .none))
    #expect(!Action.saveNow.isMoreUrgent(than: .saveNow))
  }
}
