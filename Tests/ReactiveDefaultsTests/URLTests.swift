import Foundation
import ReactiveDefaults
import TestSupport
import Testing

/// The same file: equal standardized paths (the design's round-trip rule for file URLs).
private func sameFile(_ lhs: URL?, _ rhs: URL) -> Bool {
  lhs?.isFileURL == true && lhs?.standardizedFileURL.path == rhs.standardizedFileURL.path
}

@Suite struct URLTests {
  static let webURLs = [
    "https://example.com",
    "https://example.com/a b".addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!,
    "https://user:secret@example.com:8443/path/to%20file?query=1&b=%C3%A9#fragment",
    "http://[::1]:8080/",
    "ftp://ftp.example.org/pub/file.txt",
    "mailto:someone@example.com?subject=Hi%20there",
    "myapp://open/item?id=42",
    "custom:opaque-thing",
    "urn:isbn:0451450523",
    "https://例え.jp/パス",
    "data:text/plain;base64,SGVsbG8=",
  ]

  @Test(arguments: webURLs)
  func webURLsRoundTripExactly(_ text: String) throws {
    let url = try #require(URL(string: text))
    let (store, issues) = makeStore()
    store[.documentURL] = url
    #expect(store[.documentURL]?.absoluteString == url.absoluteString)
    // Plain Foundation reads the library's archive too (corelibs' own set(URL) would have kept only the path).
    #expect(store.userDefaults.url(forKey: "documentUrl")?.absoluteString == url.absoluteString)
    #expect(issues.values.isEmpty)
  }

  @Test(arguments: ["/tmp/with space/file.txt", "/", "/tmp/ümlaut", "/tmp/a/../b/./c"])
  func fileURLsRoundTripToTheSameFile(_ path: String) {
    let url = URL(fileURLWithPath: path)
    let (store, _) = makeStore()
    store[.documentURL] = url
    #expect(sameFile(store[.documentURL], url))
    #expect(sameFile(store.userDefaults.url(forKey: "documentUrl"), url))
  }

  @Test func oddFileURLsRoundTrip() throws {
    let (store, _) = makeStore()
    for text in ["file://", "file://host/x", "file:///tmp/a%20b.txt", "file:/usr/local/bin"] {
      let url = try #require(URL(string: text))
      store[.documentURL] = url
      #expect(sameFile(store[.documentURL], url), "\(text)")
    }
    let relative = URL(fileURLWithPath: "relative/file", relativeTo: URL(fileURLWithPath: "/base/"))
    store[.documentURL] = relative
    #expect(store[.documentURL]?.path == "/base/relative/file")
  }

  @Test func readsPathsAndURLStrings() {
    let (store, issues) = makeStore()
    let plain = store.userDefaults
    plain.set("/tmp/plain path", forKey: "documentUrl")
    #expect(store[.documentURL] == URL(fileURLWithPath: "/tmp/plain path"))
    plain.set("~/Documents/x.txt", forKey: "documentUrl")
    #expect(store[.documentURL]?.path == NSHomeDirectory() + "/Documents/x.txt")
    plain.set("https://example.com/x", forKey: "documentUrl")
    #expect(store[.documentURL]?.absoluteString == "https://example.com/x")
    plain.set("not a url", forKey: "documentUrl")
    #expect(store[.documentURL] == nil)
    #expect(issues.values == [.typeMismatch(key: "documentUrl", expected: "Optional<URL>", found: "String")])
  }

  @Test func expandsTildeInsideAnArchive() throws {
    let archive = try NSKeyedArchiver.archivedData(
      withRootObject: URL(fileURLWithPath: "~/notes.txt") as NSURL, requiringSecureCoding: true)
    #expect(URL(propertyListValue: .data(archive))?.path == NSHomeDirectory() + "/notes.txt")
  }

  /// What Apple's `set(_: URL?, forKey:)` stores for a file in the home folder: `~/…` relative to the working
  /// directory. Resolving the URL before expanding `~` gave `<working directory>/~/notes.txt`.
  @Test func expandsTildeInAnArchiveRelativeToTheWorkingDirectory() throws {
    let abbreviated = NSURL(fileURLWithPath: "~/notes.txt", relativeTo: URL(fileURLWithPath: "/tmp/work/"))
    let archive = try NSKeyedArchiver.archivedData(withRootObject: abbreviated, requiringSecureCoding: true)
    #expect(URL(propertyListValue: .data(archive))?.path == NSHomeDirectory() + "/notes.txt")
  }

  @Test func readsApplesOwnKeyedArchive() throws {
    // Made by Apple's Foundation: NSURL "foo.xml" relative to "https://www.example.com".
    let archive = try Data(contentsOf: fixtureURL("NSKeyedUnarchiver-URLTest.plist"))
    let (store, _) = makeStore()
    store.userDefaults.set(archive, forKey: "documentUrl")
    #expect(store[.documentURL]?.absoluteString == "https://www.example.com/foo.xml")
  }

  @Test func rejectsArchivesOfOtherThingsAndGarbage() throws {
    let notURL = try NSKeyedArchiver.archivedData(withRootObject: "a string" as NSString, requiringSecureCoding: true)
    #expect(URL(propertyListValue: .data(notURL)) == nil)
    #expect(URL(propertyListValue: .data(Data("garbage".utf8))) == nil)
    #expect(URL(propertyListValue: .data(Data("bplist00garbage".utf8))) == nil)
    #expect(URL(propertyListValue: .integer(1)) == nil)
  }

  /// Apple's 1,981 URL parsing cases, as a corpus of real and odd URLs: every one that Foundation parses
  /// here round-trips through a store.
  @Test func applesURLParsingCorpusRoundTrips() throws {
    let data = try Data(contentsOf: fixtureURL("NSURLTestData.plist"))
    let root = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
    let cases = try #require(root?["ParsingTests"] as? [Any])
    #expect(cases.count == 1981)
    let (store, issues) = makeStore()
    var tested = 0
    var failures: [String] = []
    for case let entry as [String: Any] in cases {
      guard let text = entry["In-Url"] as? String else { continue }
      let base = (entry["In-Base"] as? String).flatMap { URL(string: $0) }
      guard let url = URL(string: text, relativeTo: base) else { continue }
      tested += 1
      store[.documentURL] = url
      let back = store[.documentURL]
      let ok = url.isFileURL ? sameFile(back, url) : back?.absoluteString == url.absoluteString
      if !ok { failures.append("\(text) -> \(back?.absoluteString ?? "nil")") }
    }
    #expect(tested > 1500)
    #expect(failures.isEmpty, "\(failures.count) of \(tested) failed, first: \(failures.prefix(5))")
    #expect(issues.values.isEmpty)
  }
}
