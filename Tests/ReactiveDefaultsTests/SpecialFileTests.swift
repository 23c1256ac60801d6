import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// A FIFO, socket or device where a suite's plist should be (issue 48: a read renamed it to
/// `x.corrupt-size0-inode…`). corelibs would block forever opening a FIFO, so it is never asked to load or save the
/// suite while one stands there, and nothing renames or replaces it: a new store of the suite is refused, an open one
/// keeps the values it had, and its saves and edits fail, naming what stands there, until a file is back.
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

  /// A FIFO put in place of the plist while a store is open: reads keep giving what the store held, a refresh
  /// returns, saves and edits fail with the reason, and the FIFO stays; once a file is back, the store saves again.
  @Test func aFIFOPutInPlaceOfAnOpenSuitesPlistIsLeftAlone() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let path = try #require(store.hub.persistence?.file.path)
    let key = DefaultsKey<Int>("k", default: -1)
    store[key] = 1
    try store.save()
    try FileManager.default.removeItem(atPath: path)
    try #require(mkfifo(path, 0o600) == 0)
    // Off the cooperative pool: were corelibs asked to load the suite, it would block here for good.
    try await offThePool {
      store.refresh()
      #expect(store[key] == 1)
      store[key] = 2
      #expect(store[key] == 2)
      #expect {
        try store.save()
      } throws: { error in
        guard case .saveFailed(_, let reason) = error as? DefaultsError else { return false }
        return reason.contains("is a FIFO, not a file")
      }
      #expect {
        try store.property(key).update { $0 += 1 }
      } throws: { error in
        guard case .saveFailed(_, let reason) = error as? DefaultsError else { return false }
        return reason.contains("is a FIFO, not a file")
      }
    }
    #expect(FileSystem.posix.status(path)?.kind == .fifo)
    let folder = try FileManager.default.contentsOfDirectory(atPath: preferencesFolder.path)
    #expect(!folder.contains { $0.hasPrefix("\(name).plist.corrupt") }, "\(folder)")
    #expect(issues.values.contains { $0.description.contains("is a FIFO, not a file") }, "\(issues.values)")
    // A file back in its place: the store saves its write again.
    try FileManager.default.removeItem(atPath: path)
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any]
    #expect(domain?["k"] as? Int == 2)
  }
}
