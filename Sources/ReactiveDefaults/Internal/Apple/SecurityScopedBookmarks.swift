#if canImport(Darwin)
  import Foundation

  /// Remembered documents on Apple platforms: bookmarks and security scopes, as Apple's "Providing access to
  /// directories" (iOS, iPadOS, visionOS) and "Enabling security-scoped bookmark and URL access" (macOS) describe.
  /// The decisions (when to renew, what to report) are `DocumentResolution`'s, on every platform.
  struct SecurityScopedBookmarks: DocumentSystem {
    func makeBookmark(of url: URL) throws -> Data? {
      try url.bookmarkData(options: Self.creationOptions, includingResourceValuesForKeys: nil, relativeTo: nil)
    }

    func resolveBookmark(_ bookmark: Data) throws -> (url: URL, isStale: Bool)? {
      var isStale = false
      let url = try URL(
        resolvingBookmarkData: bookmark, options: Self.resolutionOptions, relativeTo: nil,
        bookmarkDataIsStale: &isStale)
      return (url, isStale)
    }

    func fileExists(at url: URL) -> Bool {
      FileManager.default.fileExists(atPath: url.path)
    }

    func startAccess(_ url: URL) -> Bool {
      url.startAccessingSecurityScopedResource()
    }

    func stopAccess(_ url: URL) {
      url.stopAccessingSecurityScopedResource()
    }

    /// A sandboxed Mac app (macOS, Mac Catalyst) needs security-scoped bookmarks (and the
    /// `com.apple.security.files.bookmarks.app-scope` entitlement): plain ones carry an implicit scope that lasts until
    /// the Mac restarts at most. An app outside the sandbox makes plain ones (a security-scoped one fails there), which
    /// open without a scope. Resolution never shows UI nor mounts a volume (it runs on the thread that reads: an Rx
    /// property resolves its first element on the main thread; a volume that is gone is reported as unavailable),
    /// and a plain bookmark's resolution must not open the URL's access itself, which nothing would close:
    /// `startAccess` does, and `stopAccess` closes it.
    private static let isSandboxed = ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
    private static let plainResolution: URL.BookmarkResolutionOptions = [
      .withoutImplicitStartAccessing, .withoutUI, .withoutMounting,
    ]

    #if os(macOS)
      private static var creationOptions: URL.BookmarkCreationOptions { isSandboxed ? [.withSecurityScope] : [] }
      private static var resolutionOptions: URL.BookmarkResolutionOptions {
        isSandboxed ? [.withSecurityScope, .withoutUI, .withoutMounting] : plainResolution
      }
    #elseif targetEnvironment(macCatalyst)
      private static var creationOptions: URL.BookmarkCreationOptions { isSandboxed ? [.withSecurityScope] : [] }
      private static var resolutionOptions: URL.BookmarkResolutionOptions {
        isSandboxed ? [.withSecurityScope, .withoutUI, .withoutMounting] : plainResolution
      }
    #else
      /// iOS, iPadOS, visionOS, tvOS, watchOS: the document's scope is implicit in the bookmark, made while the URL's
      /// access is open, as in Apple's "Providing access to directories".
      private static let creationOptions: URL.BookmarkCreationOptions = [.minimalBookmark]
      private static let resolutionOptions = plainResolution
    #endif
  }
#endif
