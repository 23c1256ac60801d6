import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A fresh folder for one test's files (removed at the end of the test by the caller).
private func makeFolder(_ function: String = #function) -> URL {
  let label = function.prefix { $0.isLetter || $0.isNumber }
  let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
    "ReactiveDefaultsTests.\(label).\(UUID().uuidString)")
  try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

/// A file store over `url`, with its issues recorded.
private func makeFileStore(_ url: URL) throws -> (DefaultsStore, Recorder<DefaultsError>) {
  let store = try #require(DefaultsStore(fileURL: url))
  let issues = Recorder<DefaultsError>()
  store.issueHandler = { issues.append($0) }
  return (store, issues)
}

/// What another process's save leaves: the file replaced atomically with `entries`.
private func replaceFromOutside(_ url: URL, with entries: [String: Any]) throws {
  let data = try PropertyListSerialization.data(fromPropertyList: entries, format: .xml, options: 0)
  let temporary = url.deletingLastPathComponent().appendingPathComponent(".outside-\(UUID().uuidString)")
  try data.write(to: temporary)
  #expect(rename(temporary.path, url.path) == 0)
}

private func fileEntries(_ url: URL) throws -> [String: Any]? {
  guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
  return try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
}

private let count = DefaultsKey<Int>("count", default: 0)
private let name = DefaultsKey<String>("name", default: "")

@Suite struct FileStoreTests {
  @Test func urlsThatAreNotFilesAreRefused() throws {
    #expect(DefaultsStore(fileURL: try #require(URL(string: "https://example.com/settings.plist"))) == nil)
    #expect(DefaultsStore(fileURL: URL(fileURLWithPath: "/tmp/", isDirectory: true)) == nil)
    #expect(DefaultsStore(fileURL: URL(fileURLWithPath: "/")) == nil)
  }

  /// Nothing is created by opening, reading or saving nothing; the first save of a write creates the folder (and
  /// every missing folder above it) and the file, an XML property list others read.
  @Test func theFileAndItsFolderAppearWithTheFirstWrite() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("a/b/settings.plist")
    let (store, issues) = try makeFileStore(url)
    #expect(store[count] == 0)
    try await offThePool { try store.save() }
    #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("a").path))
    store[count] = 3
    store[name] = "café"
    store[DefaultsKey<Date>("when", default: .distantPast)] = Date(timeIntervalSinceReferenceDate: 1)
    store[DefaultsKey<Data>("blob", default: Data())] = Data([1, 2, 3])
    try await offThePool { try store.save() }
    let bytes = try #require(FileManager.default.contents(atPath: url.path))
    #expect(String(decoding: bytes.prefix(5), as: UTF8.self) == "<?xml")
    let entries = try #require(try fileEntries(url))
    #expect(entries["count"] as? Int == 3)
    #expect(entries["name"] as? String == "café")
    #expect(entries["when"] as? Date == Date(timeIntervalSinceReferenceDate: 1))
    #expect(entries["blob"] as? Data == Data([1, 2, 3]))
    #expect(store.fileURL?.path == SuiteFile.canonicalPath(url.path))
    #expect(issues.values.isEmpty)
  }

  /// However the path is spelled (`..`, a symbolic link in the folder path, relative to the working directory is
  /// not tested: tests share it), the stores share one hub, so an observer of one hears writes through the other.
  @Test func everySpellingOfTheFileSharesItsObservers() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let real = folder.appendingPathComponent("real")
    try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
    let link = folder.appendingPathComponent("link")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
    let first = try #require(DefaultsStore(fileURL: real.appendingPathComponent("s.plist")))
    let viaDots = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: real.path + "/../real/./s.plist")))
    let viaLink = try #require(DefaultsStore(fileURL: link.appendingPathComponent("s.plist")))
    // A folder below that does not exist yet, reached through the link and `..`.
    let missing = try #require(DefaultsStore(fileURL: URL(fileURLWithPath: link.path + "/new/../s.plist")))
    #expect(first.hub === viaDots.hub)
    #expect(first.hub === viaLink.hub)
    #expect(first.hub === missing.hub)
    let seen = Recorder<Int>()
    let token = first.observe(count) { seen.append($0) }
    defer { token.cancel() }
    viaLink[count] = 7
    #expect(await seen.wait(timeout: 10) { $0.last == 7 })
    // Saved now: the coalesced save, after the folder's removal, would make it again (and leave it behind).
    try await offThePool { try viaLink.save() }
  }

  /// Another process's atomic save reaches an observer (through the folder watch) and a store nobody observes (at
  /// its next read), and a write of ours saved afterwards keeps the other process's keys.
  @Test func anotherWritersSaveReachesReadsAndObservers() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, issues) = try makeFileStore(url)
    store[count] = 1
    try await offThePool { try store.save() }
    // Unobserved: the next read looks at the file.
    try replaceFromOutside(url, with: ["count": 2, "other": "kept"])
    #expect(await waitUntil { store[count] == 2 })
    // The tools' whole-domain read follows the file as a read does (the device checker read a device file's store
    // that another component had opened, and got the file as that one last saved it).
    try replaceFromOutside(url, with: ["count": 4, "other": "kept"])
    #expect(await waitUntil { store.storedEntries["count"] == .integer(4) })
    try replaceFromOutside(url, with: ["count": 2, "other": "kept"])
    #expect(await waitUntil { store[count] == 2 })
    let seen = Recorder<Int>()
    let token = store.observe(count) { seen.append($0) }
    defer { token.cancel() }
    try replaceFromOutside(url, with: ["count": 3, "other": "kept"])
    #expect(await seen.wait(timeout: 10) { $0.last == 3 })
    store[name] = "mine"
    try await offThePool { try store.save() }
    let entries = try #require(try fileEntries(url))
    #expect(entries["other"] as? String == "kept")
    #expect(entries["count"] as? Int == 3)
    #expect(entries["name"] as? String == "mine")
    #expect(issues.values.isEmpty)
  }

  /// A removal of the file from outside (`rm`) reads as the missing file: observers hear the defaults.
  @Test func aRemovedFileReadsAsDefaults() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, _) = try makeFileStore(url)
    store[count] = 5
    try await offThePool { try store.save() }
    let seen = Recorder<Int>()
    let token = store.observe(count) { seen.append($0) }
    defer { token.cancel() }
    #expect(unlink(url.path) == 0)
    #expect(await seen.wait(timeout: 10) { $0.last == 0 })
    #expect(store[count] == 0)
  }

  /// A removal of the file (`rm`, a writer that takes no lock) between a save's check of the file and the stamp it
  /// works from: the save merges its write into the missing file, memory becomes that file, and the observer, which
  /// only waits, hears the default. (Before, the save found the file as it had left it, wrote the write alone into a
  /// new file, and kept memory as it was: reads and the observer kept the removed value; history checker, seed
  /// 200267.)
  @Test func aFileRemovedWhileASaveChecksItReachesTheObservers() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, issues) = try makeFileStore(url)
    let path = try #require(store.hub.persistence?.file.path)
    let name = DefaultsKey<String>("name", default: "")
    store[count] = 5
    try await offThePool { try store.save() }
    let seen = Recorder<Int>()
    let token = store.observe(count) { seen.append($0) }
    defer { token.cancel() }
    #expect(await seen.wait(timeout: 10) { $0 == [5] })
    let removed = try await removingFile(path, at: .afterCheck) {
      store[name] = "mine"
      try await offThePool { try store.save() }
    }
    #expect(removed == [true])
    #expect(await seen.wait(timeout: 10) { $0.last == 0 }, "\(seen.values)")
    let entries = try #require(try fileEntries(url))
    #expect(entries["count"] == nil)
    #expect(entries["name"] as? String == "mine")
    #expect(store[count] == 0)
    #expect(store[name] == "mine")
    #expect(issues.values.isEmpty, "\(issues.values)")
  }

  /// A file that is not a property list is reported and left as it is by reads (the path may be another program's
  /// file); the next save moves it aside, as a backup, and writes the file anew. The store reads defaults meanwhile
  /// and never crashes.
  @Test func aDamagedFileIsReportedLeftAloneByReadsAndBackedUpByTheNextSave() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let bad = Data("<?xml version=\"1.0\"?><plist><dict><key>count</key><integer>1".utf8)
    try bad.write(to: url)
    let (store, issues) = try makeFileStore(url)
    #expect(store[count] == 0)
    guard case .unreadableFile(_, _, nil)? = issues.values.first else {
      Issue.record("not reported, or reported with a backup a read made: \(issues.values)")
      return
    }
    let listed = { try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasSuffix(".lock") } }
    #expect(try listed() == ["s.plist"])
    #expect(try Data(contentsOf: url) == bad)
    store[count] = 2
    try await offThePool { try store.save() }
    #expect(try fileEntries(url)?["count"] as? Int == 2)
    let after = try listed()
    let backups = after.filter { $0.hasPrefix("s.plist.corrupt-") }
    #expect(backups.count == 1, "\(after)")
    #expect(try backups.first.map { try Data(contentsOf: folder.appendingPathComponent($0)) } == bad)
  }

  /// A save that cannot be made (the folder's place is taken by a file) throws, leaves the writes pending, and the
  /// next save, once the way is clear, saves them.
  @Test func aFailedSaveIsReportedAndTriedAgain() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let blocker = folder.appendingPathComponent("sub")
    try Data("not a folder".utf8).write(to: blocker)
    let url = blocker.appendingPathComponent("s.plist")
    let (store, _) = try makeFileStore(url)
    store[count] = 4
    await #expect(throws: DefaultsError.self) { try await offThePool { try store.save() } }
    #expect(store[count] == 4)
    try FileManager.default.removeItem(at: blocker)
    try await offThePool { try store.save() }
    #expect(try fileEntries(url)?["count"] as? Int == 4)
  }

  /// An edit is one atomic save of all its writes; keys that differ only by Unicode normalization stay two keys;
  /// removing every key removes the file, as for a suite.
  @Test func editsRemovalsAndExactKeys() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, issues) = try makeFileStore(url)
    try await offThePool {
      try store.edit { transaction in
        transaction[count] = 1
        transaction[name] = "n"
      }
    }
    #expect(try fileEntries(url)?.count == 2)
    let composed = DefaultsKey<Int>("caf\u{E9}", default: 0)
    let decomposed = DefaultsKey<Int>("cafe\u{301}", default: 0)
    store[composed] = 1
    store[decomposed] = 2
    try await offThePool { try store.save() }
    #expect(store[composed] == 1)
    #expect(store[decomposed] == 2)
    // (Read by exact keys: Foundation's `[String: Any]` would merge the two spellings.)
    let exact = try DefaultsStore.domain(fromPropertyList: try #require(FileManager.default.contents(atPath: url.path)))
    #expect(exact.count == 4)
    store.removeAll()
    try await offThePool { try store.save() }
    #expect(!FileManager.default.fileExists(atPath: url.path))
    #expect(issues.values.isEmpty)
  }

  /// Where a folder that does not exist cannot be watched (Apple's `DispatchSource`; the files in memory here), an
  /// observer of a file store in such a folder still hears the file once another program makes the folder and the
  /// file: the watch is tried again until it can begin, and catches up then.
  @Test func aWatchOfAFolderThatDoesNotExistYetBeginsOnceItDoes() async throws {
    let files = MemoryFileSystem(watchesOnlyExistingFolders: true)
    files.makeFolder("/memory")
    let file = SuiteFile(folder: "/memory/app", fileName: "s.plist", system: files.fileSystem)
    let store = DefaultsStore(hub: ChangeHub(storage: FileStorage(file: file), suiteName: nil, suiteIsKnown: true))
    let seen = Recorder<Int>()
    let token = store.observe(count) { seen.append($0) }
    defer { token.cancel() }
    #expect(await seen.wait(timeout: 10) { $0 == [0] })
    files.makeFolder("/memory/app")
    files.put(.file(SuiteFile.encode(["count": .integer(3)])), at: "/memory/app/s.plist")
    #expect(await seen.wait(timeout: 10) { $0.last == 3 }, "\(seen.values)")
  }

  /// Text XML 1.0 cannot carry (most control characters, U+FFFE, U+FFFF), in a value at any depth or in a key's
  /// name, is refused with a typed error and the stored value kept, through every way of writing: the file stays one
  /// that every reader accepts. Tab, line feed and carriage return are kept.
  @Test func textXMLCannotCarryIsRefusedAndTheStoredValueKept() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, issues) = try makeFileStore(url)
    store[name] = "ok"
    for bad in ["a\u{0}b", "escape \u{1B}[31m", "e\u{FFFE}", "\u{FFFF}"] {
      #expect(throws: DefaultsError.self) { try store.set(bad, for: name) }
    }
    #expect(store[name] == "ok")
    let list = DefaultsKey<[String]>("list", default: [])
    #expect(throws: DefaultsError.self) { try store.set(["fine", "bell\u{7}"], for: list) }
    let table = DefaultsKey<[String: Int]>("table", default: [:])
    #expect(throws: DefaultsError.self) { try store.set(["key\u{8}": 1], for: table) }
    store[DefaultsKey<String>("bad\u{1B}key", default: "")] = "x"
    guard case .encodingFailed(let key, _, let reason)? = issues.values.last else {
      Issue.record("no encodingFailed reported: \(issues.values)")
      return
    }
    #expect(key == "bad\u{1B}key")
    #expect(reason.contains("U+001B in the key name"))
    #expect(throws: DefaultsError.self) {
      try store.edit { transaction in try transaction.set("\u{0}", for: name) }
    }
    #expect(throws: DefaultsError.self) { try store.importEntries(["imported": .string("\u{2}")]) }
    store[name] = "tab\tline\ncarriage\r"
    try await offThePool { try store.save() }
    let data = try #require(FileManager.default.contents(atPath: url.path))
    #expect(try DefaultsStore.domain(fromPropertyList: data) == ["name": .string("tab\tline\ncarriage\r")])
  }

  /// Thousands of new keys and one save: every key reaches the file (the cost is the benchmark's).
  @Test func thousandsOfNewKeysReachTheFileInOneSave() async throws {
    let folder = makeFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("s.plist")
    let (store, issues) = try makeFileStore(url)
    for index in 0..<8000 { store[DefaultsKey<Int>("k\(index)", default: -1)] = index }
    try await offThePool { try store.save() }
    let entries = try #require(try fileEntries(url))
    #expect(entries.count == 8000)
    #expect(entries["k7999"] as? Int == 7999)
    #expect(issues.values.isEmpty)
  }
}

/// Polls `condition` until it holds or `timeout` passes (the failure bound, not a synchronisation).
private func waitUntil(timeout: Double = 10, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if condition() { return true }
    await Task.yield()
  }
  return condition()
}
