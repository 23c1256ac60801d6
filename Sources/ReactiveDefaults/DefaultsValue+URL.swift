public import Foundation

extension URL: DefaultsValue {
  /// Stored as a keyed archive (`NSKeyedArchiver` data) of the URL: the form Apple documents for
  /// `UserDefaults.set(_: URL?, forKey:)` and the one `url(forKey:)` reads on every platform.
  ///
  /// A file URL is archived with its absolute path. (On Apple platforms a top-level URL key is written with
  /// Apple's own `set(_: URL?, forKey:)` instead; corelibs' version keeps only the path, losing the scheme
  /// and host of web URLs, which is why the library archives the URL itself there.)
  public func propertyListValue() throws -> PropertyListValue? {
    .data(try NSKeyedArchiver.archivedData(withRootObject: absoluteURL as NSURL, requiringSecureCoding: true))
  }

  /// Reads a keyed archive of a URL (expanding a leading `~` in a file path), an absolute path, a `~` path,
  /// or an absolute URL string.
  public init?(propertyListValue: PropertyListValue) {
    switch propertyListValue {
    case .data(let archive):
      guard let url = KeyedArchive.url(from: archive) else { return nil }
      // Apple's `set(_: URL?, forKey:)` abbreviates the home folder as `~`, in a path relative to the working
      // directory: the relative path is looked at before the URL is resolved.
      if url.isFileURL, url.relativePath.hasPrefix("~") {
        self = URL(fileURLWithPath: NSString(string: url.relativePath).expandingTildeInPath)
      } else if url.isFileURL, url.path.hasPrefix("~") {
        self = URL(fileURLWithPath: NSString(string: url.path).expandingTildeInPath)
      } else {
        self = url.absoluteURL
      }
    case .string(let text):
      if text.hasPrefix("/") {
        self = URL(fileURLWithPath: text)
      } else if text.hasPrefix("~") {
        self = URL(fileURLWithPath: NSString(string: text).expandingTildeInPath)
      } else if let url = URL(string: text), url.scheme != nil {
        self = url
      } else {
        return nil
      }
    default: return nil
    }
  }

}
