import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Writing a suite's file: encoding, files written whole and flushed, atomic replacement by rename, and the
/// backups of files the library cannot read.
extension SuiteFile {
  // MARK: Writing

  /// A domain Foundation holds (corelibs': ``CorelibsPreferences/domain(_:)``; Apple's:
  /// ``ApplePreferences/persistentDomain(of:name:)``), as property-list values, each key exactly as it is held.
  static func entries(_ domain: NSDictionary) throws(SaveFailure) -> [PropertyListKey: PropertyListValue] {
    if case .dictionary(let entries)? = PropertyListValue(foundationObject: domain) { return entries }
    var failure = "it holds a value that is not a property-list value"
    domain.enumerateKeysAndObjects(options: []) { key, object, stop in
      guard PropertyListValue(foundationObject: object) == nil else { return }
      failure = "'\(key)' holds a \(type(of: object)), not a property-list value"
      stop.pointee = true
    }
    throw SaveFailure("cannot encode the domain: \(failure)")
  }

  /// A domain as the XML property list corelibs would write for it, byte for byte (``XMLPropertyList``).
  static func encode(_ entries: [PropertyListKey: PropertyListValue]) -> Data {
    XMLPropertyList.encode(entries)
  }

  /// What a file holds after corelibs' save, compared with what the library expected it to hold.
  enum SavedContents: Equatable, Sendable {
    case same
    case absent
    /// Readable, and other than expected: these bytes.
    case different(Data)
    case unreadable
  }

  /// Reads the file at `path` after corelibs' save: the bytes are compared first; when they differ, an XML file whose
  /// frame is whole (what corelibs writes) is taken as readable unparsed, and any other is parsed (a save waits
  /// for this with writes of ours held off: parsing 10,000 keys would stall them).
  func contentsAfterSave(_ path: String, expected: Data) -> SavedContents {
    do {
      guard let bytes = try readBytes(path) else { return .absent }
      if bytes == expected { return .same }
      if XMLPropertyList.frame(bytes) == .notWhole { _ = try Self.parseDomain(bytes) }
      return .different(bytes)
    } catch {
      return .unreadable
    }
  }

  /// Writes `bytes` to a new file at `target` (which must not exist; mode 0600, never through a link), stamped to
  /// the nanosecond and flushed to disk (unless `flushing` is false). A failed write leaves no file behind.
  func writeNewFile(_ target: String, _ bytes: Data, flushing: Bool = true) throws(SaveFailure) {
    try system.createFile(target, bytes, flushing)
  }

  /// Replaces `target` with `bytes` atomically: a new file in the same folder, flushed, renamed over it, and the
  /// folder flushed. A reader sees the old file or the new one, whole.
  func replaceAtomically(_ target: String, with bytes: Data) throws(SaveFailure) {
    let temporary = target + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try writeNewFile(temporary, bytes)
    try move(temporary, over: target, sourceIsTemporary: true)
  }

  /// Writes `bytes` as the journal, flushed, and renames it over the file: one atomic replacement (call it holding the
  /// file's lock). Returns the stamp the file then has. A program that takes no lock (a file-sync tool emptying a
  /// synced folder, a user's `rm`) may remove the journal between its write and its rename: the rename then finds
  /// nothing, and since the bytes are still at hand the journal is written again, at most ``journalAttempts`` times in
  /// all. A rename that fails with the journal still there throws, and the next open completes that journal.
  func commitJournal(_ bytes: Data) throws(SaveFailure) -> Stamp? {
    var attempt = 1
    while true {
      try writeNewFile(journalPath, bytes)
      let stamp = stamp(of: journalPath)
      do {
        try system.rename(journalPath, path)
      } catch {
        guard attempt < Self.journalAttempts, system.status(journalPath) == nil else { throw error }
        attempt += 1
        continue
      }
      try flushFolder(of: path)
      return stamp
    }
  }

  /// How many times ``commitJournal(_:)`` writes a journal that others keep removing before it gives up.
  static let journalAttempts = 3

  /// Renames `source` over `target` and flushes their folder. On failure a temporary `source` is removed; a file
  /// that holds data (a journal, an unreadable plist) is kept.
  func move(
    _ source: String, over target: String, sourceIsTemporary: Bool = false, flushing: Bool = true
  ) throws(SaveFailure) {
    do {
      try system.rename(source, target)
    } catch {
      if sourceIsTemporary { system.remove(source) }
      throw error
    }
    if flushing { try flushFolder(of: target) }
  }

  /// Flushes the folder of `path` to disk, so a rename or a removal in it survives a power cut.
  func flushFolder(of path: String) throws(SaveFailure) {
    try system.flushFolder((path as NSString).deletingLastPathComponent)
  }

  /// Stamps the file at `path` to the nanosecond if it is still the file stamped `expected`; its new stamp, or nil
  /// (``FileSystem/restamp``).
  func restamp(_ path: String, expected: Stamp) throws(SaveFailure) -> Stamp? {
    try system.restamp(path, expected)
  }

  /// Flushes the file at `path` to disk; false when there is no file (``FileSystem/flushFile``).
  func flush(_ path: String) throws(SaveFailure) -> Bool {
    try system.flushFile(path)
  }

  /// Removes the file at `path`, if there is one.
  func remove(_ path: String) {
    system.remove(path)
  }

  // MARK: Backups

  /// The backup name of an unreadable file's content: one per distinct content, so that every process that finds
  /// the same bad file names the same backup.
  func backupPath(for bytes: Data) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
    for byte in bytes {
      hash ^= UInt64(byte)
      hash = hash &* 0x100_0000_01b3
    }
    return path + ".corrupt-" + String(hash, radix: 16)
  }

  /// Keeps a copy of an unreadable regular file's bytes beside it (nothing for an empty one), read without
  /// following a link. Returns the backup's path, or nil when it could not be written (a full disk: then no partial
  /// backup is left either).
  func keepCopy() -> String? {
    guard let bytes = (try? readBytes(path)) ?? nil, !bytes.isEmpty else { return nil }
    let backup = backupPath(for: bytes)
    if (try? readBytes(backup)) ?? nil == bytes { return backup }
    do {
      try replaceAtomically(backup, with: bytes)
      return backup
    } catch {
      return nil
    }
  }

  /// Moves the plist out of the way (to the backup name of its content, or `<suite>.plist.corrupt-<size>` for one
  /// too large to read), so that corelibs never reads it. Returns the new path, or nil.
  func moveAside() -> String? {
    guard let stamp = stamp() else { return nil }
    let bytes = stamp.size <= Int64(Self.maximumSize) ? (try? readBytes(path)) ?? nil : nil
    let target = bytes.map(backupPath(for:)) ?? path + ".corrupt-size\(stamp.size)-inode\(stamp.inode)"
    do {
      try move(path, over: target)
      return target
    } catch {
      return nil
    }
  }
}
