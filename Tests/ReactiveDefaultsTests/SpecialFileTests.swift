import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// A FIFO, socket or device where a suite's plist should be (issue 48: a read renamed it to
/// `x.corrupt-size0-inode…`). corelibs would block forever opening a FIFO, so a new store of the suite is refused and
/// nothing renames it. (An open store's guards are not tested in this process: any test's plain `synchronize()` makes
/// corelibs drop or save every suite it holds, and its next load of this one would block the whole process, as it
/// blocked CI once. `DurabilityTests` runs the tool over a FIFO in a process of its own.)
@Suite(.linuxOnly) struct SpecialFileTests {
  @Test func aStoreOfASuiteWhosePlistIsAFIFOIsRefused() throws {
    let name = makeSuiteName()
    let path = preferencesFolder.appendingPathComponent("\(name).plist").path
    try #require(mkfifo(path, 0o600) == 0)
    defer { removeSuiteFile(name) }
    #expect(DefaultsStore(suiteName: name) == nil)
    #expect(DefaultsStore.suiteFileRefusal(name) == "\(path) is a FIFO, not a file")
    #expect(FileSystem.posix.status(path)?.kind == .fifo)
  }
}
