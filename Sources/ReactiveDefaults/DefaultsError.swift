/// What can go wrong reading or writing a key.
///
/// Reads never throw: a stored value of the wrong type reads as the key's default, and the mismatch is
/// reported to ``DefaultsStore/issueHandler``. ``DefaultsStore/value(for:)`` and ``DefaultsStore/set(_:for:)``
/// throw these errors for callers who want to know.
public enum DefaultsError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The key holds a value of another type than the key's.
  ///
  /// - Parameters:
  ///   - key: The key's name.
  ///   - expected: The key's value type, such as `Double` or `Optional<URL>`.
  ///   - found: The kind of value stored, such as `String` or `Array`, or the Swift type of an object that is not
  ///     a property-list value.
  case typeMismatch(key: String, expected: String, found: String)

  /// The value could not be converted to its stored form (for example a ``DefaultsCodable`` value with a
  /// non-finite `Double`); nothing was written.
  case encodingFailed(key: String, type: String, reason: String)

  /// The key's name cannot be used (it is empty); nothing was read or written.
  case invalidKey(String)

  /// The suite's plist file cannot be read as a dictionary property list (garbage, truncated, empty, an array,
  /// a folder). Reads give the keys' defaults; the file was copied to `backup` before a save could replace it
  /// (moved there, for a malformed binary plist that corelibs could crash on).
  ///
  /// - Parameters:
  ///   - path: The plist file.
  ///   - reason: What is wrong with it.
  ///   - backup: Where its contents are kept (`<suite>.plist.corrupt-<hash of the content>` beside it: one backup
  ///     per distinct content), or nil when there was nothing to keep or the library leaves the path alone (an
  ///     empty file, a folder, a FIFO, a symbolic link).
  case unreadableFile(path: String, reason: String, backup: String?)

  /// Saving the suite's file failed; the file on disk is as it was before the attempt, and the unsaved writes stay
  /// pending: the next save (the next write's, ``DefaultsStore/save()``, ``DefaultsStore/flush()`` or the save at
  /// exit) tries them again.
  ///
  /// - Parameters:
  ///   - path: The plist file.
  ///   - reason: What failed, with the system's reason (no space left, read-only file system, file name too
  ///     long, not a directory, too many open files, a symbolic link left alone, ...).
  case saveFailed(path: String, reason: String)

  /// ``DefaultsStore/edit(_:)`` was called on a suite while this thread is already editing it (from inside an edit's
  /// body), or from a callback that `UserDefaults` makes synchronously during a write to it. The inner edit would
  /// wait for the outer one forever; nothing was read or written.
  ///
  /// - Parameter suite: The suite's name (or "the standard suite", "an in-memory suite").
  case reentrantEdit(suite: String)

  /// A migration step could not be applied: the migration stopped there, and the suite is as it was before
  /// ``DefaultsStore/migrate(_:)`` (no step of this call was applied or recorded).
  ///
  /// - Parameters:
  ///   - step: The step's identity, such as `rename volumeLevel to volume`.
  ///   - key: The key whose stored value was in the way, when one was.
  ///   - reason: What went wrong: the value found, or the error a custom step or a conversion threw.
  case migrationFailed(step: String, key: String?, reason: String)

  /// The write would take the suite to the size its Apple platform refuses, so it was refused before it reached
  /// `UserDefaults`: the stored value was kept. iOS, iPadOS, watchOS and visionOS refuse a domain of 4 MiB or more
  /// (and drop the write, saying so only in the system log); tvOS terminates an app whose domain reaches 1 MB.
  /// macOS and Linux have no such limit (on Linux a suite's file may hold 64 MiB).
  ///
  /// - Parameters:
  ///   - key: The key written.
  ///   - size: The suite's estimated size with the write, in bytes (about what a binary property list takes).
  ///   - limit: The platform's limit, in bytes.
  case domainTooLarge(key: String, size: Int, limit: Int)

  /// tvOS: a write took the suite past 512 KB, where the system warns; at `limit` (1 MB) it terminates the app, and
  /// the library refuses such writes (``domainTooLarge(key:size:limit:)``). Reported once each time the suite grows
  /// past 512 KB; the write was stored.
  ///
  /// - Parameters:
  ///   - key: The key written.
  ///   - size: The suite's estimated size after the write, in bytes.
  ///   - limit: The size the system terminates the app at, in bytes.
  case domainNearingLimit(key: String, size: Int, limit: Int)

  /// A remembered document (``DocumentReference``) cannot be found: deleted, renamed (on Linux, where a reference is
  /// its path), on a volume that is gone, or its bookmark no longer resolves. The key reads as `nil` through
  /// ``DefaultsStore/document(_:)``; the stored reference is kept.
  ///
  /// - Parameters:
  ///   - key: The key's name; empty for a reference being made (``DocumentReference/init(url:)``) or opened on its own.
  ///   - url: The document's URL as last known.
  ///   - reason: Why it cannot be found.
  case documentUnavailable(key: String, url: String, reason: String)

  /// A remembered document's bookmark could not be made again (a stale one renewed, or a first one for a reference
  /// stored as a URL): the document opened as stored, which stays stored, and the next resolution tries again.
  ///
  /// - Parameters:
  ///   - key: The key's name.
  ///   - url: The document's URL.
  ///   - reason: What the system answered.
  case documentNotRenewed(key: String, url: String, reason: String)

  /// A synced key's write was not pushed: the remote's limits refuse it (``DefaultsRemoteLimits``); the value stays
  /// in the store, and the next write of the key is tried again. Or another device's entry of the key was refused:
  /// its stamp no honest clock makes, or its value does not decode as the key's type; the local value stays.
  ///
  /// - Parameters:
  ///   - key: The key's name.
  ///   - reason: Which limit the write passes, or which entry was refused and why.
  case syncRefused(key: String, reason: String)

  /// iCloud reported that the app's key-value storage is over its quota: its last pushes may not have reached the
  /// server. The values stay in the store.
  case syncQuotaExceeded

  /// The sync could not read or write its remote or its own state (the folder cannot be written, the store cannot be
  /// saved); it tries again at the next change.
  ///
  /// - Parameter reason: What failed.
  case syncFailed(reason: String)

  /// A readable explanation, with what to do about it.
  public var description: String {
    switch self {
    case .typeMismatch(let key, let expected, let found):
      "Key '\(key)' holds \(found), not \(expected); reading the key's default instead. "
        + "Write a \(expected) to the key, or reset it."
    case .encodingFailed(let key, let type, let reason):
      "Could not store a \(type) under '\(key)': \(reason). The stored value was kept."
    case .invalidKey(let key):
      key.isEmpty
        ? "Invalid key name: a key needs a non-empty name." : "Invalid key name '\(key)': a key needs a non-empty name."
    case .unreadableFile(let path, let reason, let backup):
      // No path: a property list handed over as bytes (an import), which has no keys to read as defaults.
      path.isEmpty
        ? "The property list \(reason)."
        : "The preferences file \(path) \(reason); its keys read as their defaults."
          + (backup.map { " Its contents were kept in \($0)." } ?? "")
    case .saveFailed(let path, let reason):
      "Could not save \(path.isEmpty ? "the suite" : path): \(reason). The file was left as it was; the unsaved "
        + "values are kept and tried again at the next save."
    case .reentrantEdit(let suite):
      "edit was called on \(suite) while this thread is already editing it (inside an edit's body, or in a callback "
        + "of a write to it); it would wait for itself. Read and write through the transaction the outer edit hands "
        + "its body instead."
    case .migrationFailed(let step, let key, let reason):
      // No step: the record of applied steps itself is unusable.
      (step.isEmpty ? "Migration failed" : "Migration step '\(step)' failed")
        + (key.map { " on key '\($0)'" } ?? "") + ": \(reason). "
        + "No step of this migration was applied; the suite is as it was."
    case .domainTooLarge(let key, let size, let limit):
      "Writing '\(key)' would make the suite about \(size) bytes, and this platform refuses a defaults domain of "
        + "\(limit) bytes or more; the stored value was kept. Keep large values in a file instead."
    case .domainNearingLimit(let key, let size, let limit):
      "Writing '\(key)' made the suite about \(size) bytes; at \(limit) bytes this platform terminates the app "
        + "(the library refuses such writes). Keep large values in a file instead."
    case .documentUnavailable(let key, let url, let reason):
      (key.isEmpty ? "The document \(url)" : "The document remembered under '\(key)' (\(url))")
        + " is not available: \(reason)." + (key.isEmpty ? "" : " The key reads as nil until it is found again.")
    case .documentNotRenewed(let key, let url, let reason):
      "The bookmark of the document remembered under '\(key)' (\(url)) could not be made again: \(reason). "
        + "The document opened as stored, which is kept; the next resolution tries again."
    case .syncRefused(let key, let reason):
      "Synced key '\(key)': \(reason). The value stays on this device."
    case .syncQuotaExceeded:
      "iCloud's key-value storage of this app is over its quota: its last changes may not reach other devices. "
        + "Sync fewer or smaller values."
    case .syncFailed(let reason):
      "The sync failed: \(reason). It tries again at the next change."
    }
  }
}
