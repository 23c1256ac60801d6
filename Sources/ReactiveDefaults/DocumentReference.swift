public import Foundation

/// A document the user picked, remembered so that it opens again after the app restarts.
///
/// On Apple platforms a document picked in open mode (`UIDocumentPickerViewController`, `NSOpenPanel` in a sandboxed
/// app) is security-scoped: its URL alone no longer opens at the next launch. A reference keeps a **bookmark** of it
/// (made while the URL's scope is held, as Apple's "Providing access to directories" asks), beside the URL for display
/// and for tools. On Linux, which has neither sandbox nor bookmarks, it keeps the file URL.
///
/// ```swift
/// extension DefaultsKeys {
///   static let lastDocument = DefaultsKey<DocumentReference?>("lastDocument")
/// }
///
/// store[.lastDocument] = try DocumentReference(url: pickedURL)    // in the picker's callback
///
/// // At any later launch: nil when nothing is remembered or the document is gone (reported to issueHandler).
/// try store.withAccess(to: .lastDocument) { url in try open(url) }
/// ```
///
/// ``DefaultsStore/document(_:)`` and ``DefaultsStore/withAccess(to:_:)`` resolve the stored reference: a **stale**
/// bookmark (the document moved, or the system wants a newer form) is made again and saved, without telling the key's
/// observers (the document did not change); a document that cannot be found (deleted, renamed on Linux, on a volume
/// that is gone) is reported as ``DefaultsError/documentUnavailable(key:url:reason:)`` and reads as `nil`.
///
/// A key holding a URL (the form `UserDefaults.url(forKey:)` reads, as `rx.url(forKey:)` stored it) reads as a
/// reference to that file; its first resolution gives it a bookmark where the app can open the file without a scope
/// (Linux, a Mac app outside the sandbox, a file in the app's container; a picked URL stored alone has lost its scope
/// at the next launch, and reads as unavailable). Two references are equal when they name the same file URL, so a
/// renewed bookmark is not a change.
///
/// Stored as a dictionary: `url` (the file URL's text) and, on Apple platforms, `bookmark` (data).
public struct DocumentReference: DefaultsValue, Hashable, CustomStringConvertible {
  /// The document's file URL, as it was when the reference was made or last resolved. Open it through
  /// ``withAccess(_:)``: on Apple platforms the URL alone may not open.
  public let url: URL

  /// The bookmark: nil on Linux, and for a reference read from a stored URL until it is first resolved.
  let bookmark: Data?

  /// The URL the system handed out for the document: the one a resolution of the bookmark returned, or the picker's
  /// URL the reference was made from. Its security scope travels with that value (Apple's
  /// `startAccessingSecurityScopedResource()` page: call it on the security-scoped URL), not with another URL of the
  /// same path, such as ``url``, rebuilt from text and standardized: access is opened, and a bookmark renewed, on this
  /// one. Neither stored nor compared; nil for a reference read from storage until it is resolved.
  let accessURL: URL?

  /// Remembers the document at `url`: makes its bookmark on Apple platforms (opening the URL's security scope for
  /// the time it takes), checks that a file is there on Linux.
  ///
  /// - Parameter url: A file URL, such as one a document picker handed over.
  /// - Throws: ``DefaultsError/documentUnavailable(key:url:reason:)`` (with an empty key) when `url` is not a file URL,
  ///   has a relative path (`file:notes.txt`), names no file (or a FIFO, a socket, a device; on Linux, a folder), or
  ///   the system refuses to make its bookmark.
  public init(url: URL) throws(DefaultsError) {
    try self.init(url: url, system: PlatformDocuments.system)
  }

  init(url: URL, system: any DocumentSystem) throws(DefaultsError) {
    guard url.isFileURL else {
      throw .documentUnavailable(key: "", url: url.absoluteString, reason: "it is not a file URL")
    }
    // `URL(string: "file:notes.txt")` is a file URL whose path is relative: it would name a file of whatever folder
    // the process works in when it is resolved.
    guard url.absoluteURL.path.hasPrefix("/") else {
      throw .documentUnavailable(
        key: "", url: url.absoluteString, reason: "its path is relative, so it names no one file (\(url.path))")
    }
    // The URL as handed over, whose security scope is the picker's (a standardized copy may not carry it), looked at
    // and bookmarked with its scope open: a sandboxed app may not see the file otherwise.
    let made = DocumentResolution.withAccess(to: url, system: system) { url -> Result<Data?, DocumentProblem> in
      guard system.fileExists(at: url) else { return .failure(DocumentProblem("there is no file at \(url.path)")) }
      if let kind = system.notADocument(at: url) { return .failure(DocumentProblem("\(url.path) is \(kind)")) }
      return Result { try system.makeBookmark(of: url) }.mapError {
        DocumentProblem("its bookmark could not be made: \(DocumentResolution.describe($0))")
      }
    }
    switch made {
    case .success(let bookmark): self.init(url: url.standardizedFileURL, bookmark: bookmark, accessURL: url)
    case .failure(let problem):
      throw .documentUnavailable(key: "", url: url.absoluteString, reason: problem.description)
    }
  }

  init(url: URL, bookmark: Data?, accessURL: URL? = nil) {
    self.url = url
    self.bookmark = bookmark
    self.accessURL = accessURL
  }

  /// The URL to open access on: ``accessURL``, else ``url``.
  var urlToOpen: URL { accessURL ?? url }

  /// Resolves the reference and runs `body` with access to the document open, closing it however `body` ends (on
  /// Apple platforms `startAccessingSecurityScopedResource()` and its balancing `stop…`; on Linux a plain call).
  ///
  /// A stale bookmark still opens, but is renewed and saved only through a store: prefer
  /// ``DefaultsStore/withAccess(to:_:)``, or a reference that ``DefaultsStore/document(_:)`` handed out.
  ///
  /// - Parameter body: What to do with the document's URL.
  /// - Returns: What `body` returned.
  /// - Throws: ``DefaultsError/documentUnavailable(key:url:reason:)`` (with an empty key) when the document cannot be
  ///   found; what `body` threw.
  public func withAccess<Result>(_ body: (URL) throws -> Result) throws -> Result {
    try withAccess(system: PlatformDocuments.system, body)
  }

  func withAccess<Result>(system: any DocumentSystem, _ body: (URL) throws -> Result) throws -> Result {
    switch DocumentResolution.resolve(self, renewing: false, system: system) {
    case .resolved(let resolved, _, _):
      return try DocumentResolution.withAccess(to: resolved.urlToOpen, system: system, body)
    case .unavailable(let reason):
      throw DefaultsError.documentUnavailable(key: "", url: url.absoluteString, reason: reason)
    }
  }

  /// The file's path.
  public var description: String { url.path }

  /// Equal when both name the same file URL (their bookmarks may differ: a renewed one is the same document).
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.url == rhs.url
  }

  /// Hashes the file URL, as `==` compares it.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(url)
  }

  /// `["url": <the file URL's text>, "bookmark": <data>]`, without `bookmark` where there is none.
  public func propertyListValue() throws -> PropertyListValue? {
    var entries: [PropertyListKey: PropertyListValue] = ["url": .string(url.absoluteString)]
    if let bookmark { entries["bookmark"] = .data(bookmark) }
    return .dictionary(entries)
  }

  /// Reads the stored dictionary, or a file URL in any form `URL` reads (a keyed archive, a path, a URL string).
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .dictionary(let entries):
      guard case .string(let text)? = entries["url"], let url = URL(propertyListValue: .string(text)),
        Self.isLocalFile(url)
      else { return nil }
      var bookmark: Data?
      switch entries["bookmark"] {
      case nil: bookmark = nil
      case .data(let data)?: bookmark = data
      default: return nil
      }
      self.init(url: url.standardizedFileURL, bookmark: bookmark)
    default:
      guard let url = URL(propertyListValue: propertyListValue), Self.isLocalFile(url) else { return nil }
      self.init(url: url.standardizedFileURL, bookmark: nil)
    }
  }

  /// A file URL of this machine (`file:///…` or `file://localhost/…`): another host's file is not one to open.
  private static func isLocalFile(_ url: URL) -> Bool {
    guard url.isFileURL else { return false }
    let host = url.host ?? ""
    return host.isEmpty || host == "localhost"
  }
}
