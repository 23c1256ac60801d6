import Foundation
import Testing

@testable import ReactiveDefaults

/// A suite file's record over files in memory (``MemoryFileSystem``), with no disk: journal recovery, merges that
/// stop between any two of their steps, and the backups of files the library cannot read, each decided exactly as on
/// disk and checked step by step. (corelibs' copy is a real one, of a suite no file backs.)
@Suite struct FileSeamTests {
  private let files = MemoryFileSystem()
  private let folder = "/memory/" + UUID().uuidString
  private let name = "FileSeamTests." + UUID().uuidString

  init() {
    files.makeFolder("/memory")
    files.makeFolder(folder)
  }

  private var path: String { folder + "/" + name + ".plist" }
  private var journal: String { path + ".journal" }

  /// A record of the suite, as a new process makes one.
  private func record() -> SuiteFileRecord {
    SuiteFileRecord(
      file: SuiteFile(folder: folder, fileName: name + ".plist", system: files.fileSystem),
      corelibs: CorelibsDomain(name: name, isStandard: false), defaults: UserDefaults(suiteName: name)!)
  }

  private func plist(_ entries: [PropertyListKey: PropertyListValue]) -> MemoryFileSystem.Node {
    .file(SuiteFile.encode(entries))
  }

  private func entries(at path: String) throws -> [PropertyListKey: PropertyListValue]? {
    guard case .file(let bytes)? = files.node(at: path) else { return nil }
    return try SuiteFile.parseDomain(bytes)
  }

  /// A whole journal is the newest save: an open completes it. A partial one never reached the plist: it goes.
  @Test func anOpenCompletesAWholeJournalAndRemovesAPartialOne() throws {
    files.put(plist(["a": .integer(1)]), at: path)
    files.put(plist(["a": .integer(2), "b": .integer(2)]), at: journal)
    #expect(record().open() == nil)
    #expect(try entries(at: path) == ["a": .integer(2), "b": .integer(2)])
    #expect(files.node(at: journal) == nil)

    files.put(.file(Data("<?xml version=\"1.0\"?><plist><dict><key>a</key>".utf8)), at: journal)
    #expect(record().open() == nil)
    #expect(try entries(at: path) == ["a": .integer(2), "b": .integer(2)])
    #expect(files.node(at: journal) == nil)
  }

  /// A merge stopped after its journal was written and before the rename (the process died, or the rename failed)
  /// changes nothing a reader sees; the next open completes it, keeping every key.
  @Test func aMergeStoppedBeforeItsRenameIsCompletedByTheNextOpen() throws {
    files.put(plist(["a": .integer(1), "b": .integer(1)]), at: path)
    let first = record()
    #expect(first.open() == nil)
    files.failNext(.rename)
    #expect(throws: SaveFailure.self) { try first.merge([("b", .integer(2)), ("c", .integer(3))], loadingCopy: true) }
    #expect(try entries(at: path) == ["a": .integer(1), "b": .integer(1)])
    #expect(try entries(at: journal) == ["a": .integer(1), "b": .integer(2), "c": .integer(3)])
    #expect(record().open() == nil)
    #expect(try entries(at: path) == ["a": .integer(1), "b": .integer(2), "c": .integer(3)])
    #expect(files.node(at: journal) == nil)
  }

  /// A journal removed between its write and its rename (a file-sync tool emptying the folder, which takes no lock)
  /// is written again: the merge lands. Removed at every attempt, the merge fails and leaves the file as it was.
  @Test func aJournalRemovedBeforeItsRenameIsWrittenAgain() throws {
    files.put(plist(["a": .integer(1)]), at: path)
    let record = record()
    #expect(record.open() == nil)
    files.removeBeforeNextRenames(journal, times: SuiteFile.journalAttempts - 1)
    #expect(try record.merge([("b", .integer(2))], loadingCopy: true) == nil)
    #expect(try entries(at: path) == ["a": .integer(1), "b": .integer(2)])
    #expect(files.contents(of: folder) == [path, path + ".lock"])
    #expect(record.isSynced)

    files.removeBeforeNextRenames(journal, times: SuiteFile.journalAttempts)
    #expect(throws: SaveFailure.self) { try record.merge([("c", .integer(3))], loadingCopy: true) }
    #expect(try entries(at: path) == ["a": .integer(1), "b": .integer(2)])
    #expect(files.contents(of: folder) == [path, path + ".lock"])
  }

  /// A merge that cannot write its journal (a full disk) leaves the file as it was, and nothing beside it.
  @Test func aMergeThatCannotWriteLeavesTheFileAndNoJournal() throws {
    files.put(plist(["a": .integer(1)]), at: path)
    let record = record()
    #expect(record.open() == nil)
    files.failNext(.create, "cannot write: No space left on device")
    #expect(throws: SaveFailure.self) { try record.merge([("a", .integer(2))], loadingCopy: true) }
    #expect(try entries(at: path) == ["a": .integer(1)])
    #expect(files.contents(of: folder) == [path, path + ".lock"])
    // The record still knows the file as it is: the next merge applies to it.
    #expect(record.isSynced)
    #expect(try record.merge([("b", .integer(2))], loadingCopy: true) == nil)
    #expect(try entries(at: path) == ["a": .integer(1), "b": .integer(2)])
  }

  /// A merge renames its journal over the plist, so the plist's inode changes (a reader holding the old one reads
  /// it whole), and the record knows the result as its own save: a change by another program is not.
  @Test func aMergeReplacesTheFileAndKnowsItsOwnSave() throws {
    files.put(plist(["a": .integer(1)]), at: path)
    let record = record()
    #expect(record.open() == nil)
    let before = try #require(record.file.stamp())
    #expect(try record.merge([("b", .integer(2)), ("a", nil)], loadingCopy: true) == nil)
    #expect(try entries(at: path) == ["b": .integer(2)])
    #expect(record.file.stamp()?.inode != before.inode)
    #expect(record.isSynced)
    files.put(plist(["b": .integer(3)]), at: path)
    #expect(!record.isSynced)
  }

  /// An unreadable file is reported with a copy named by its content, made once however many processes find it; a
  /// merge then moves it aside and writes the suite anew, keeping the copy.
  @Test func anUnreadableFileIsKeptOnceAndReplacedByAMerge() throws {
    let bad = Data("not a property list".utf8)
    files.put(.file(bad), at: path)
    guard case .unreadableFile(_, _, let backup?)? = record().open() else {
      Issue.record("the unreadable file was not reported with a backup")
      return
    }
    #expect(files.node(at: backup) == .file(bad))
    guard case .unreadableFile(_, _, let again?)? = record().open() else {
      Issue.record("a second open did not report the file")
      return
    }
    #expect(again == backup)
    #expect(files.contents(of: folder).filter { $0.contains(".corrupt-") } == [backup])
    let record = record()
    _ = record.open()
    #expect(try record.merge([("a", .integer(1))], loadingCopy: true) == nil)
    #expect(try entries(at: path) == ["a": .integer(1)])
    #expect(files.node(at: backup) == .file(bad))
  }

  /// A FIFO in place of the plist (corelibs would block opening it) is reported and left where it is: no merge
  /// replaces it. A link is left alone too, and never written through.
  @Test func aFIFOAndALinkAreLeftAlone() throws {
    files.put(.fifo, at: path)
    let opened = record()
    guard case .unreadableFile(_, let reason, nil)? = opened.open() else {
      Issue.record("the FIFO was not reported, or was moved")
      return
    }
    #expect(reason == "is a FIFO, not a file")
    #expect(throws: SaveFailure.self) { try opened.merge([("a", .integer(1))], loadingCopy: true) }
    #expect(files.node(at: path) == .fifo)
    #expect(files.contents(of: folder).filter { $0.contains(".corrupt") } == [])

    files.put(.symbolicLink, at: path)
    let record = record()
    guard case .unreadableFile(_, _, nil)? = record.open() else {
      Issue.record("the link was not reported, or was moved")
      return
    }
    #expect(throws: SaveFailure.self) { try record.merge([("a", .integer(1))], loadingCopy: true) }
    #expect(files.node(at: path) == .symbolicLink)
  }

  /// A lock that cannot be taken stops a merge before it reads or writes anything.
  @Test func aLockThatCannotBeTakenStopsTheMerge() throws {
    files.put(plist(["a": .integer(1)]), at: path)
    let record = record()
    #expect(record.open() == nil)
    let creates = files.calls(.create)
    files.failNext(.lock, "cannot lock: Permission denied")
    #expect(throws: SaveFailure.self) { try record.merge([("a", .integer(2))], loadingCopy: true) }
    #expect(files.calls(.create) == creates)
    #expect(try entries(at: path) == ["a": .integer(1)])
  }
}
