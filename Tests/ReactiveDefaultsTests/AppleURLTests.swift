import Foundation
import Testing

@testable import ReactiveDefaults

@Suite struct AppleURLTests {
  /// Apple's `set(_: URL?, forKey:)` stores a file in the home folder as `~/…` relative to the working directory;
  /// the library writes URLs that way on Apple platforms. Read back, it is the same file (not `<cwd>/~/…`).
  @Test func aHomeFolderFileURLWrittenTheApplewayReadsBackAsTheSameFile() throws {
    let storage = MemoryStorage(behavior: .init(storesURLsAsApple: true))
    let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
    let file = URL(fileURLWithPath: NSHomeDirectory() + "/Documents/report.pdf")
    store.hub.write(.url(file), forKey: "documentUrl")
    guard case .data(let archive)? = storage.value(forKey: "documentUrl") else {
      Issue.record("no archive stored")
      return
    }
    #expect(KeyedArchive.url(from: archive)?.relativePath.hasPrefix("~") == true, "not stored the Apple way")
    #expect(store[.documentURL]?.path == file.path)
  }
}
