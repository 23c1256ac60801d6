import Foundation

/// Where a ``DefaultsSync`` keeps settings for other devices: iCloud's key-value store on Apple platforms
/// (`.iCloud`), a folder that a file-sync tool carries (``folder(_:)``), or a model of the key-value store for tests
/// (``MemoryCloud``).
///
/// A remote holds one entry per setting, under the setting's key: the library's own form (the value with the stamp of
/// the write that made it), which a remote stores and hands back as it is. The merge is the library's; a remote only
/// stores, lists and tells.
public protocol DefaultsRemote: AnyObject, Sendable {
  /// What the remote refuses: a push that would pass these limits is refused before it is made, with a typed problem
  /// (``DefaultsError/syncRefused(key:reason:)``).
  var limits: DefaultsRemoteLimits { get }

  /// Starts the remote for the device named `device` (its own file, in a folder), telling `onChange` of every change
  /// that did not come from this remote's own ``store(_:from:)``, on any thread, until the returned token ends.
  func start(device: String, onChange: @escaping @Sendable (DefaultsRemoteChange) -> Void) -> DefaultsObservation

  /// Every entry the remote holds now, by key.
  func entries() -> [String: PropertyListValue]

  /// Stores entries, each under its key, for the device named `device` (one remote may serve several stores, each
  /// its own device: a folder keeps each device's entries in its own file).
  ///
  /// - Throws: ``DefaultsError`` when the entries could not be stored (then none of them is).
  func store(_ entries: [String: PropertyListValue], from device: String) throws(DefaultsError)

  /// Asks the remote to exchange with other devices now (iCloud: `synchronize()`); called when the sync starts and
  /// by ``DefaultsSync/synchronize()``.
  ///
  /// - Throws: ``DefaultsError/syncFailed(reason:)`` when the remote cannot (iCloud: `synchronize()` answered
  ///   false, which Apple documents for an app without the key-value storage entitlement).
  func synchronize() throws(DefaultsError)
}

extension DefaultsRemote {
  /// Does nothing: a remote with no server to ask.
  public func synchronize() throws(DefaultsError) {}
}

/// What a remote accepts.
public struct DefaultsRemoteLimits: Sendable, Equatable {
  /// The most keys the remote holds (nil: no limit).
  public var keys: Int?
  /// The most bytes all values take together (nil: no limit).
  public var totalBytes: Int?
  /// The most bytes one value takes (nil: no limit).
  public var valueBytes: Int?
  /// The longest key, in UTF-8 bytes (nil: no limit).
  public var keyBytes: Int?

  /// Limits; nil for each one the remote does not have.
  public init(keys: Int? = nil, totalBytes: Int? = nil, valueBytes: Int? = nil, keyBytes: Int? = nil) {
    self.keys = keys
    self.totalBytes = totalBytes
    self.valueBytes = valueBytes
    self.keyBytes = keyBytes
  }

  /// No limits (a synced folder).
  public static let unlimited = DefaultsRemoteLimits()

  /// iCloud's key-value store: 1,024 keys, 1 MB for all values together, 1 MB for one value, keys of 64 bytes.
  public static let keyValueStore = DefaultsRemoteLimits(
    keys: 1024, totalBytes: 1_000_000, valueBytes: 1_000_000, keyBytes: 64)
}

/// A change a remote tells of, with its reason (iCloud's `NSUbiquitousKeyValueStoreChangeReasonKey`).
public struct DefaultsRemoteChange: Sendable, Equatable {
  /// Why the remote changed.
  public enum Reason: Sendable, Equatable {
    /// Another device changed entries.
    case serverChange
    /// The first download from the server happened: writes made before it were discarded and are pushed again.
    case initialSync
    /// The remote is over its quota: the last pushes may not have reached the server.
    case quotaViolation
    /// The user's account changed: the remote now holds the new account's entries.
    case accountChange
    /// The app came to the foreground: the sync asks the remote to exchange now (``DefaultsRemote/synchronize()``,
    /// a refusal reported) and looks at every key.
    case foreground
  }

  /// Why the remote changed.
  public var reason: Reason
  /// The keys that changed; nil when the remote cannot say (every key is looked at).
  public var keys: [String]?

  /// A change for `reason`, of `keys` (nil: any key).
  public init(reason: Reason, keys: [String]?) {
    self.reason = reason
    self.keys = keys
  }
}
