import Foundation
import Testing

@testable import ReactiveDefaultsCLI

/// The platform-neutral part of `rdefaults domains`, run against a folder the test makes: on macOS the folder is
/// `~/Library/Preferences`, on Linux the XDG one, and neither may be touched by a test.
@Suite struct DomainListTests {
  @Test func domainsAreThePlistFilesWithValidNames() throws {
    let folder = NSTemporaryDirectory() + "rdefaults-domains-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    for name in ["b.plist", "a.plist", "notes.txt", "a.plist.lock", "c.plist.corrupt-1f", ".plist"] {
      try Data().write(to: URL(fileURLWithPath: folder + "/" + name))
    }
    #expect(Commands.domainNames(in: folder) == ["a", "b"])
  }

  @Test func aMissingFolderHasNoDomains() {
    #expect(Commands.domainNames(in: "/nonexistent-\(UUID().uuidString)").isEmpty)
  }
}
