#if canImport(Darwin)
  import Foundation
  #if os(macOS) || targetEnvironment(macCatalyst)
    import Security
  #endif

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
    private static let plainResolution: URL.BookmarkResolutionOptions = [
      .withoutImplicitStartAccessing, .withoutUI, .withoutMounting,
    ]

    #if os(macOS) || targetEnvironment(macCatalyst)
      /// Whether the app runs in the App Sandbox: its `com.apple.security.app-sandbox` entitlement, read with
      /// `SecTaskCreateFromSelf(_:)` and `SecTaskCopyValueForEntitlement(_:_:_:)` (macOS, Mac Catalyst 13). When it
      /// cannot be read (no entitlements at all, or an error: the two look alike), the variable the sandbox sets in
      /// every sandboxed process, `APP_SANDBOX_CONTAINER_ID`, decides.
      private static let isSandboxed: Bool = {
        if let task = SecTaskCreateFromSelf(nil),
          let value = SecTaskCopyValueForEntitlement(task, "com.apple.security.app-sandbox" as CFString, nil)
        {
          return (value as? Bool) ?? false
        }
        return ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
      }()

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
