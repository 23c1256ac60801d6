import Foundation

@testable import ReactiveDefaults

/// Documents as the tests model them: bookmarks that can be told to go stale, documents that move or disappear,
/// and a count of every access opened and closed.
///
/// As on Apple platforms, a security scope travels with the URL value the system handed out (a picker's, a
/// resolution's), not with its path: those URLs are spelled with a `/./` before the file's name (a token no other URL
/// of the path carries: a URL rebuilt from stored text, or standardized, lacks it), and access opens only on them.
final class MemoryDocuments: DocumentSystem {
  private struct Document: Sendable {
    var url: URL
    var exists = true
    /// Bookmarks made before this generation resolve as stale.
    var staleBefore = 0
  }

  private struct State: Sendable {
    var documents: [Int: Document] = [:]
    var generation = 0
    var bookmarksMade = 0
    var opened = 0
    var closed = 0
    /// Accesses open now, by URL.
    var open: [URL: Int] = [:]
    var bookmarksMadeWithoutAccess = 0
    /// `startAccess` calls on a URL that carries no scope (not one this system handed out).
    var unscopedAccesses = 0
    var refusesBookmarks = false
    var grantsAccess = true
    var whileMakingBookmark: (@Sendable () -> Void)?
  }

  /// The library's `Locked`, which ThreadSanitizer sees (a bare `Mutex` is invisible to it on Linux).
  private let state = Locked(State())

  /// A document at `url`; returns the URL a picker would hand out for it (carrying its scope).
  @discardableResult
  func add(_ url: URL) -> URL {
    state.withLock { $0.documents[$0.documents.count] = Document(url: url.standardizedFileURL) }
    return Self.scoped(url)
  }

  /// `url` as this system hands it out: with its scope (``MemoryDocuments``).
  static func scoped(_ url: URL) -> URL {
    let url = url.standardizedFileURL
    return URL(fileURLWithPath: url.deletingLastPathComponent().path + "/./" + url.lastPathComponent)
  }

  /// Whether `url` carries a scope: it is spelled as this system hands URLs out.
  static func carriesScope(_ url: URL) -> Bool {
    url.path.contains("/./")
  }

  /// Every bookmark of the document at `url` made so far resolves as stale.
  func makeStale(_ url: URL) {
    state.withLock { state in
      state.generation += 1
      for (id, document) in state.documents where document.url == url.standardizedFileURL {
        state.documents[id]?.staleBefore = state.generation
      }
    }
  }

  /// The document moves: its bookmarks follow it, and resolve as stale.
  func move(_ url: URL, to newURL: URL) {
    makeStale(url)
    state.withLock { state in
      for (id, document) in state.documents where document.url == url.standardizedFileURL {
        state.documents[id]?.url = newURL.standardizedFileURL
      }
    }
  }

  /// The document is gone (deleted, on a volume that is gone).
  func remove(_ url: URL) {
    state.withLock { state in
      for (id, document) in state.documents where document.url == url.standardizedFileURL {
        state.documents[id]?.exists = false
      }
    }
  }

  var refusesBookmarks: Bool {
    get { state.withLock { $0.refusesBookmarks } }
    set { state.withLock { $0.refusesBookmarks = newValue } }
  }

  var grantsAccess: Bool {
    get { state.withLock { $0.grantsAccess } }
    set { state.withLock { $0.grantsAccess = newValue } }
  }

  /// Runs while the next bookmarks are made (another thread's write, in the middle of a renewal).
  func whileMakingBookmark(_ action: (@Sendable () -> Void)?) {
    state.withLock { $0.whileMakingBookmark = action }
  }

  var bookmarksMade: Int { state.withLock { $0.bookmarksMade } }
  var bookmarksMadeWithoutAccess: Int { state.withLock { $0.bookmarksMadeWithoutAccess } }
  var accesses: (opened: Int, closed: Int) { state.withLock { ($0.opened, $0.closed) } }
  var unscopedAccesses: Int { state.withLock { $0.unscopedAccesses } }

  // MARK: DocumentSystem

  func makeBookmark(of url: URL) throws -> Data? {
    let action = state.withLock { $0.whileMakingBookmark }
    action?()
    return try state.withLock { state in
      guard !state.refusesBookmarks else { throw DocumentProblem("the system refused the bookmark") }
      let url = url.standardizedFileURL
      guard let id = state.documents.first(where: { $0.value.exists && $0.value.url == url })?.key else {
        throw DocumentProblem("no such document")
      }
      state.bookmarksMade += 1
      if state.open[url.standardizedFileURL, default: 0] == 0 { state.bookmarksMadeWithoutAccess += 1 }
      return Data("bookmark \(id) \(state.generation) \(state.bookmarksMade)".utf8)
    }
  }

  func resolveBookmark(_ bookmark: Data) throws -> (url: URL, isStale: Bool)? {
    let parts = String(decoding: bookmark, as: UTF8.self).split(separator: " ")
    guard parts.count == 4, parts[0] == "bookmark", let id = Int(parts[1]), let generation = Int(parts[2]) else {
      throw DocumentProblem("not a bookmark")
    }
    return try state.withLock { state in
      guard let document = state.documents[id], document.exists else { throw DocumentProblem("the document is gone") }
      return (Self.scoped(document.url), generation < document.staleBefore)
    }
  }

  func fileExists(at url: URL) -> Bool {
    state.withLock { $0.documents.values.contains { $0.exists && $0.url == url.standardizedFileURL } }
  }

  func startAccess(_ url: URL) -> Bool {
    state.withLock { state in
      guard state.grantsAccess else { return false }
      guard Self.carriesScope(url) else {
        state.unscopedAccesses += 1
        return false
      }
      state.opened += 1
      state.open[url.standardizedFileURL, default: 0] += 1
      return true
    }
  }

  func stopAccess(_ url: URL) {
    state.withLock { state in
      state.closed += 1
      state.open[url.standardizedFileURL, default: 0] -= 1
    }
  }
}
