// Internal/Documents: remembered documents' decisions, on every platform. `DocumentSystem` is the seam between them
// and the platform: Apple's bookmarks and security scopes (`Internal/Apple/SecurityScopedBookmarks.swift`), plain file
// URLs on Linux (`FileURLDocuments`), and the tests' in-memory model, which can report stale or missing documents.
// `DocumentResolution` decides, through the seam only: renew a stale bookmark, report a document that is gone, give a
// bookmark to a reference that has only a URL.

import Foundation

// `stat` may come through another module than Glibc's (with the RxCocoa trait's packages in the build, it comes
// through CoreFoundation's or Dispatch's): its members then need that module imported too.
#if canImport(CDispatch)
  import CDispatch
#endif
#if canImport(CoreFoundation)
  import CoreFoundation
#endif
#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// What the platform does with documents: make and resolve bookmarks, open and close access.
protocol DocumentSystem: Sendable {
  /// A bookmark of the file at `url`, made while the caller holds access to it; nil where the platform has no bookmarks
  /// (Linux: the URL is the reference).
  func makeBookmark(of url: URL) throws -> Data?

  /// The URL a bookmark leads to now, and whether the bookmark should be made again (it is stale: the document moved,
  /// or the bookmark's form is outdated); nil where the platform has no bookmarks. Throws when the document cannot be
  /// found.
  func resolveBookmark(_ bookmark: Data) throws -> (url: URL, isStale: Bool)?

  /// Whether a file (or folder) exists at `url`: how a reference without a bookmark is resolved.
  func fileExists(at url: URL) -> Bool

  /// Why what is at `url` can be no document, in words ("a FIFO", "a socket", "a device", or "a folder" where
  /// documents are files); nil for a file, or when it cannot be told (nothing there, or a sandbox that hides it).
  func notADocument(at url: URL) -> String?

  /// Opens access to `url`'s security scope: true when this call opened it, and `stopAccess` must then close it once.
  func startAccess(_ url: URL) -> Bool

  /// Closes what a `startAccess` that returned true opened.
  func stopAccess(_ url: URL)
}

extension DocumentSystem {
  /// On Apple platforms a folder can be a document (a package: `.pages`, `.rtfd`); a FIFO, socket or device never is.
  func notADocument(at url: URL) -> String? {
    DocumentItems.problem(atPath: url.path, foldersAreDocuments: true)
  }
}

/// What kind of item stands at a document's path (following symbolic links, as opening it would).
enum DocumentItems {
  static func problem(atPath path: String, foldersAreDocuments: Bool) -> String? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    switch info.st_mode & S_IFMT {
    case S_IFIFO: return "a FIFO"
    case S_IFSOCK: return "a socket"
    case S_IFCHR, S_IFBLK: return "a device"
    case S_IFDIR: return foldersAreDocuments ? nil : "a folder"
    default: return nil
    }
  }
}

/// The platform's documents: bookmarks and security scopes on Apple platforms, file URLs on Linux.
enum PlatformDocuments {
  static var system: any DocumentSystem {
    #if canImport(Darwin)
      SecurityScopedBookmarks()
    #else
      FileURLDocuments()
    #endif
  }
}

/// Documents as Linux has them: no sandbox, no bookmarks; a reference is its file URL, resolved while a file is there.
struct FileURLDocuments: DocumentSystem {
  func makeBookmark(of url: URL) throws -> Data? { nil }

  func resolveBookmark(_ bookmark: Data) throws -> (url: URL, isStale: Bool)? { nil }

  func fileExists(at url: URL) -> Bool {
    FileManager.default.fileExists(atPath: url.path)
  }

  /// Linux has no document packages: a folder is no document either.
  func notADocument(at url: URL) -> String? {
    DocumentItems.problem(atPath: url.path, foldersAreDocuments: false)
  }

  func startAccess(_ url: URL) -> Bool { false }

  func stopAccess(_ url: URL) {}
}

/// Why a document could not be referenced or resolved, in words (the `reason` of the errors).
struct DocumentProblem: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// The decisions of remembered documents, made through a ``DocumentSystem``.
enum DocumentResolution {
  /// The outcome of resolving a reference.
  enum Outcome {
    /// The document is at `reference.url`; `renewed` when `reference` carries a bookmark made anew (a stale one
    /// renewed, or a first one for a reference that had only a URL), to be saved in place of the stored one.
    case resolved(DocumentReference, renewed: Bool, renewalFailure: String?)
    /// The document cannot be found.
    case unavailable(reason: String)
  }

  /// Resolves `reference`: through its bookmark when it has one the platform can resolve, else by the file at its URL.
  /// `renewing`: make a new bookmark when the stored one is stale, or when there is none and the platform makes them.
  static func resolve(_ reference: DocumentReference, renewing: Bool, system: any DocumentSystem) -> Outcome {
    var url = reference.url
    // The URL the system handed out, whose security scope is the one to open (``DocumentReference/accessURL``): the
    // resolution's, else the one the reference carries (a picker's); none for a reference read from storage.
    var access = reference.accessURL
    var needsBookmark = true
    var resolvedByBookmark = false
    if let bookmark = reference.bookmark {
      do {
        if let resolved = try system.resolveBookmark(bookmark) {
          // The same file, spelled otherwise (macOS resolves `/var/…` to `/private/var/…`): the stored spelling stays,
          // so that a renewal is no change for observers.
          let same =
            resolved.url.standardizedFileURL == url
            || resolved.url.resolvingSymlinksInPath() == url.resolvingSymlinksInPath()
          (url, needsBookmark, resolvedByBookmark) = (
            same ? url : resolved.url.standardizedFileURL, resolved.isStale, true
          )
          access = resolved.url
        } else {
          // A bookmark this platform cannot read (a suite copied from an Apple platform to Linux): kept as it is.
          needsBookmark = false
        }
      } catch {
        return .unavailable(reason: "its bookmark cannot be resolved: \(describe(error))")
      }
    }
    guard resolvedByBookmark || system.fileExists(at: url) else {
      return .unavailable(reason: "there is no file at \(url.path) (deleted, renamed, or on a volume that is gone)")
    }
    if let kind = system.notADocument(at: url) {
      return .unavailable(reason: "\(url.path) is \(kind), not a document")
    }
    let kept = DocumentReference(url: url, bookmark: reference.bookmark, accessURL: access)
    guard renewing, needsBookmark else { return .resolved(kept, renewed: false, renewalFailure: nil) }
    switch makeBookmark(of: access ?? url, system: system) {
    case .success(let bookmark?):
      return .resolved(
        DocumentReference(url: url, bookmark: bookmark, accessURL: access), renewed: true, renewalFailure: nil)
    case .success(nil):
      return .resolved(kept, renewed: false, renewalFailure: nil)
    case .failure(let error):
      return .resolved(kept, renewed: false, renewalFailure: describe(error))
    }
  }

  /// A bookmark of `url`, made while access to it is open (as Apple's pages require for a security-scoped URL).
  static func makeBookmark(of url: URL, system: any DocumentSystem) -> Result<Data?, any Error> {
    withAccess(to: url, system: system) { _ in Result { try system.makeBookmark(of: url) } }
  }

  /// Runs `body` with access to `url` open, and closes it after, however `body` ends.
  static func withAccess<Result, Failure: Error>(
    to url: URL, system: any DocumentSystem, _ body: (URL) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let opened = system.startAccess(url)
    defer { if opened { system.stopAccess(url) } }
    return try body(url)
  }

  static func describe(_ error: any Error) -> String {
    if let problem = error as? DocumentProblem { return problem.description }
    let error = error as NSError
    return "\(error.localizedDescription) [\(error.domain) \(error.code)]"
  }
}
