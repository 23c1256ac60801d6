import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// What `rdefaults export` and `import` read and leave: a suite's file read under its lock without a store (a whole
/// journal a killed save left read in its place, nothing on disk changed), and an import that does not load corelibs'
/// copy again, after which a read still gives the imported values.
@Suite(.linuxOnly) struct ToolReadsTests {
  @Test func aSuitesFileIsReadAsSavedAndAWholeJournalInItsPlace() throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let path = preferencesFolder.appendingPathComponent("\(name).plist").path
    #expect(try DefaultsStore.savedEntries(ofSuite: name) == nil)  // no file: a store reports it
    #expect(!FileManager.default.fileExists(atPath: path + ".lock"))
    let store = try #require(DefaultsStore(suiteName: name))
    store[.count] = 1
    try store.save()
    #expect(try DefaultsStore.savedEntries(ofSuite: name) == ["count": .integer(1)])
    #expect(try store.savedEntries() == ["count": .integer(1)])
    // A killed save's whole journal is the newest content: read in the file's place, the file left as it was.
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    try XMLPropertyList.encode(["count": .integer(2)]).write(to: URL(fileURLWithPath: path + ".journal"))
    defer { try? FileManager.default.removeItem(atPath: path + ".journal") }
    #expect(try DefaultsStore.savedEntries(ofSuite: name) == ["count": .integer(2)])
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    try FileManager.default.removeItem(atPath: path + ".journal")
    try Data("not a plist".utf8).write(to: URL(fileURLWithPath: path))
    #expect(throws: DefaultsError.self) { try DefaultsStore.savedEntries(ofSuite: name) }
  }

  @Test func anImportThatDoesNotLoadCorelibsCopyIsStillReadBack() throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    store[.count] = 1
    try store.save()
    #expect(store[.count] == 1)
    try store.importEntries(["count": .integer(5), "name": .string("n")], loadingCopy: false)
    #expect(store[.count] == 5)
    #expect(store[.name] == "n")
    #expect(try DefaultsStore.savedEntries(ofSuite: name) == ["count": .integer(5), "name": .string("n")])
  }
}
