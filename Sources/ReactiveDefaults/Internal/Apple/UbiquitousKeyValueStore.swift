// Apple platforms only (see ApplePreferences.swift's header): iCloud's key-value store as a sync's remote. Each call
// here is checked against its page in Apple's documentation (named in issue 37's note).

#if canImport(Darwin)
  import Foundation

  /// iCloud's key-value store (`NSUbiquitousKeyValueStore.default`) as a sync's remote: ``DefaultsRemote/iCloud``.
  ///
  /// The app needs the iCloud key-value storage entitlement. Its limits (1,024 keys, 1 MB for all values, 1 MB for
  /// one value, keys of 64 bytes) are checked before each push: a write past them is refused with
  /// ``DefaultsError/syncRefused(key:reason:)`` rather than dropped by the system (or, for a long key, raising an
  /// exception). The store's changes from other devices arrive with their reason: an initial download, an account
  /// change (the new account's values win, and nothing of the old one is pushed into it) and a quota violation each
  /// get their own handling. The store is asked to synchronize when the sync starts and each time the app comes to
  /// the foreground (UIKit's and AppKit's notifications: on watchOS, which posts neither, call
  /// ``DefaultsSync/synchronize()`` when the app becomes active). Run the iCloud sync in the app only: an app
  /// extension (a widget) reads the app group's suite, which the app's sync keeps up to date.
  public final class UbiquitousKeyValueStore: DefaultsRemote {
    /// The one remote over the app's iCloud key-value store.
    public static let shared = UbiquitousKeyValueStore()

    private init() {}

    /// iCloud's limits (``DefaultsRemoteLimits/keyValueStore``).
    public var limits: DefaultsRemoteLimits { .keyValueStore }

    /// Notification tokens are thread-safe to hand to `removeObserver(_:)`; `NSObjectProtocol` is not `Sendable`.
    private struct Tokens: @unchecked Sendable {
      let tokens: [any NSObjectProtocol]
    }

    /// Observes the store's external changes, and the app coming to the foreground, until the token ends.
    public func start(device: String, onChange: @escaping @Sendable (DefaultsRemoteChange) -> Void)
      -> DefaultsObservation
    {
      let center = NotificationCenter.default
      let external = center.addObserver(
        forName: NSUbiquitousKeyValueStore.didChangeExternallyNotification, object: NSUbiquitousKeyValueStore.default,
        queue: nil
      ) { notification in
        let reason = notification.userInfo?[NSUbiquitousKeyValueStoreChangeReasonKey] as? Int
        let keys = notification.userInfo?[NSUbiquitousKeyValueStoreChangedKeysKey] as? [String]
        onChange(DefaultsRemoteChange(reason: Self.reason(reason), keys: keys))
      }
      // UIKit's and AppKit's notification names, by their strings: the library links neither framework. The sync
      // calls `synchronize()` (a refusal reported) and looks at every key.
      let foreground = ["UIApplicationWillEnterForegroundNotification", "NSApplicationDidBecomeActiveNotification"]
        .map { name in
          center.addObserver(forName: Notification.Name(name), object: nil, queue: nil) { _ in
            onChange(DefaultsRemoteChange(reason: .foreground, keys: nil))
          }
        }
      let tokens = Tokens(tokens: [external] + foreground)
      return DefaultsObservation {
        for token in tokens.tokens { NotificationCenter.default.removeObserver(token) }
      }
    }

    /// The reason a change notification gives (`NSUbiquitousKeyValueStoreChangeReasonKey`); a missing or unknown one
    /// is read as a server change (every key named, or every key, is looked at).
    static func reason(_ value: Int?) -> DefaultsRemoteChange.Reason {
      switch value {
      case NSUbiquitousKeyValueStoreInitialSyncChange: .initialSync
      case NSUbiquitousKeyValueStoreQuotaViolationChange: .quotaViolation
      case NSUbiquitousKeyValueStoreAccountChange: .accountChange
      default: .serverChange
      }
    }

    /// The store's entries (`dictionaryRepresentation`), those that are property-list values.
    public func entries() -> [String: PropertyListValue] {
      NSUbiquitousKeyValueStore.default.dictionaryRepresentation.compactMapValues {
        PropertyListValue(foundationObject: $0)
      }
    }

    /// Writes each entry (`set(_:forKey:)`); the system uploads them in the background.
    public func store(_ entries: [String: PropertyListValue], from device: String) throws(DefaultsError) {
      let store = NSUbiquitousKeyValueStore.default
      for (key, entry) in entries { store.set(entry.foundationObject, forKey: key) }
    }

    /// Asks the system to exchange with iCloud now (`synchronize()`).
    ///
    /// - Throws: ``DefaultsError/syncFailed(reason:)`` when it answers false: Apple documents that for an app
    ///   without the iCloud key-value storage entitlement.
    public func synchronize() throws(DefaultsError) {
      guard NSUbiquitousKeyValueStore.default.synchronize() else {
        throw .syncFailed(
          reason: "iCloud's key-value store could not synchronize: sign the app with the iCloud key-value storage "
            + "entitlement (com.apple.developer.ubiquity-kvstore-identifier)")
      }
    }
  }

  extension DefaultsRemote where Self == UbiquitousKeyValueStore {
    /// iCloud's key-value store (``UbiquitousKeyValueStore``).
    public static var iCloud: UbiquitousKeyValueStore { .shared }
  }
#endif
