import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

extension DefaultsKeys {
  fileprivate static let picked = DefaultsKey<DocumentReference?>("picked")
}

/// Remembered documents on the platform's own path, with real files: on Linux a reference is its file URL.
@Suite struct DocumentFileTests {
  private let folder: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("DocumentFileTests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }()

  private func makeFile(_ name: String) throws -> URL {
    let url = folder.appendingPathComponent(name)
    try Data("text".utf8).write(to: url)
    return url
  }

  @Test func aPickedFileOpensAgainThroughANewStoreAfterASave() throws {
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, issues) = makeStore()
    let file = try makeFile("notes.txt")
    store[.picked] = try DocumentReference(url: file)
    try store.save()
    // Another store over the suite, as at the next launch.
    let later = try #require(DefaultsStore(suiteName: store.suiteName ?? ""))
    let contents = try later.withAccess(to: .picked) { url in try Data(contentsOf: url) }
    #expect(contents == Data("text".utf8))
    #expect(later.document(.picked)?.url.standardizedFileURL == file.standardizedFileURL)
    #expect(issues.values.isEmpty)
  }

  @Test func aDeletedFileIsReportedAndReadsAsNilUntilItIsBack() throws {
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, issues) = makeStore()
    let file = try makeFile("gone.txt")
    store[.picked] = try DocumentReference(url: file)
    try FileManager.default.removeItem(at: file)
    #expect(store.document(.picked) == nil)
    guard case .documentUnavailable(let key, _, _)? = issues.values.first else {
      Issue.record("no problem reported: \(issues.values)")
      return
    }
    #expect(key == "picked")
    #expect(store[.picked] != nil, "the reference stays stored")
    #if os(Linux)
      // A bookmark of a deleted file does not come back with a new file at the path; a path does.
      _ = try makeFile("gone.txt")
      #expect(store.document(.picked)?.url.lastPathComponent == "gone.txt")
    #endif
  }

  /// On Linux a reference is its path: a renamed file is not found (Apple's bookmarks follow it).
  @Test(.linuxOnly) func aRenamedFileIsReportedOnLinux() throws {
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, issues) = makeStore()
    let file = try makeFile("draft.txt")
    store[.picked] = try DocumentReference(url: file)
    try FileManager.default.moveItem(at: file, to: folder.appendingPathComponent("final.txt"))
    var opened = false
    #expect(store.withAccess(to: .picked) { _ in opened = true } == nil)
    #expect(!opened)
    #expect(issues.values.count == 1)
    #expect(throws: DefaultsError.self) { try DocumentReference(url: file) }
  }

  @Test func whatIsNoFileIsRefused() {
    defer { try? FileManager.default.removeItem(at: folder) }
    #expect(throws: DefaultsError.self) { try DocumentReference(url: URL(string: "https://example.com/doc")!) }
    #expect(throws: DefaultsError.self) {
      try DocumentReference(url: folder.appendingPathComponent("never-made.txt"))
    }
  }

  /// A reference opens only a file: a FIFO (opening it would block until a writer came), a socket, a device or, on
  /// Linux (which has no document packages), a folder at its path is reported as unavailable, with what it is, both
  /// when the reference is made and when a stored one is resolved after the file was replaced (issue 48: such a path
  /// resolved as a document, with no issue).
  @Test(.linuxOnly, arguments: ["FIFO", "folder"]) func aFIFOOrAFolderIsNoDocument(_ kind: String) throws {
    defer { try? FileManager.default.removeItem(at: folder) }
    let (store, issues) = makeStore()
    let file = try makeFile("replaced.txt")
    store[.picked] = try DocumentReference(url: file)
    try FileManager.default.removeItem(at: file)
    if kind == "FIFO" {
      try #require(mkfifo(file.path, 0o600) == 0)
    } else {
      try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
    }
    var opened = false
    #expect(store.withAccess(to: .picked) { _ in opened = true } == nil)
    #expect(!opened)
    guard case .documentUnavailable(let key, _, let reason)? = issues.values.first else {
      Issue.record("no problem reported: \(issues.values)")
      return
    }
    #expect(key == "picked")
    #expect(reason == "\(file.path) is a \(kind), not a document")
    #expect {
      try DocumentReference(url: file)
    } throws: { error in
      guard case .documentUnavailable(_, _, let reason) = error as? DefaultsError else { return false }
      return reason == "\(file.path) is a \(kind)"
    }
  }

  /// `file:target.txt` is a file URL with a relative path: resolved against the working directory, it named whatever
  /// file of that name the process found there (issue 48).
  @Test func aRelativeFileURLIsRefused() throws {
    defer { try? FileManager.default.removeItem(at: folder) }
    let name = "relative-\(UUID()).txt"
    let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(name)
    try Data("x".utf8).write(to: here)
    defer { try? FileManager.default.removeItem(at: here) }
    let relative = try #require(URL(string: "file:\(name)"))
    #expect(relative.isFileURL)
    #expect {
      try DocumentReference(url: relative)
    } throws: { error in
      guard case .documentUnavailable(_, _, let reason) = error as? DefaultsError else { return false }
      return reason.contains("relative")
    }
    // A URL relative to an absolute base is absolute.
    #expect(
      try DocumentReference(url: URL(fileURLWithPath: name, relativeTo: here.deletingLastPathComponent())).url.path
        == here.standardizedFileURL.path)
  }
}
