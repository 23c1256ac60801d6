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

  /// A domain corelibs holds (``CorelibsPreferences/domain(_:)``), as property-list values, each key exactly as
  /// corelibs holds it.
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
  enum SavedContents {
    case same
    case absent
    /// Readable, and other than expected: these bytes.
    case different(Data)
    case unreadable
  }

  /// Reads the plist after corelibs' save: the bytes are compared first, and parsed only when they differ.
  static func contentsAfterSave(_ path: String, expected: Data) -> SavedContents {
    do {
      guard let bytes = try readBytes(path) else { return .absent }
      if bytes == expected { return .same }
      _ = try parseDomain(bytes)
      return .different(bytes)
    } catch {
      return .unreadable
    }
  }

  /// Writes `bytes` to a new file at `target` (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600) and flushes it to disk.
  /// A failed write leaves no file behind.
  static func writeNewFile(_ target: String, _ bytes: Data) throws(SaveFailure) {
    let descriptor = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw SaveFailure(operation: "cannot create \(target)") }
    var failure: SaveFailure?
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = systemWrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else {
          failure = SaveFailure(operation: "cannot write \(target)")
          return
        }
        offset += written
      }
    }
    // A modification time to the nanosecond: file systems stamp a write with a clock that ticks every few
    // milliseconds, so two saves in one tick, of one size, the second into the inode the first freed, looked like one
    // file (``Stamp``), and a process took another's newer save for its own older one (found by the history checker).
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var times = [now, now]
    if failure == nil && futimens(descriptor, &times) != 0 {
      failure = SaveFailure(operation: "cannot set the modification time of \(target)")
    }
    if failure == nil && fsync(descriptor) != 0 { failure = SaveFailure(operation: "cannot flush \(target) to disk") }
    if close(descriptor) != 0 && failure == nil { failure = SaveFailure(operation: "cannot close \(target)") }
    if let failure {
      unlink(target)
      throw failure
    }
  }

  /// Replaces `target` with `bytes` atomically: a new file in the same folder, flushed, renamed over it, and the
  /// folder flushed. A reader sees the old file or the new one, whole.
  static func replaceAtomically(_ target: String, with bytes: Data) throws(SaveFailure) {
    let temporary = target + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try writeNewFile(temporary, bytes)
    try move(temporary, over: target, sourceIsTemporary: true)
  }

  /// Renames `source` over `target` and flushes their folder. On failure a temporary `source` is removed; a file
  /// that holds data (a journal, an unreadable plist) is kept.
  static func move(
    _ source: String, over target: String, sourceIsTemporary: Bool = false, flushing: Bool = true
  ) throws(SaveFailure) {
    guard rename(source, target) == 0 else {
      let failure = SaveFailure(operation: "cannot rename \(source) to \(target)")
      if sourceIsTemporary { unlink(source) }
      throw failure
    }
    if flushing { try flushFolder(of: target) }
  }

  /// Flushes a folder's entries to disk, so a rename or an unlink in it survives a power cut.
  static func flushFolder(of path: String) throws(SaveFailure) {
    let folder = (path as NSString).deletingLastPathComponent
    let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard descriptor >= 0 else { throw SaveFailure(operation: "cannot open the folder \(folder)") }
    defer { close(descriptor) }
    guard fsync(descriptor) == 0 else { throw SaveFailure(operation: "cannot flush the folder \(folder)") }
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
    guard let bytes = (try? Self.readBytes(path)) ?? nil, !bytes.isEmpty else { return nil }
    let backup = backupPath(for: bytes)
    if (try? Self.readBytes(backup)) ?? nil == bytes { return backup }
    do {
      try Self.replaceAtomically(backup, with: bytes)
      return backup
    } catch {
      return nil
    }
  }

  /// Moves the plist out of the way (to the backup name of its content, or `<suite>.plist.corrupt-<size>` for one
  /// too large to read), so that corelibs never reads it. Returns the new path, or nil.
  func moveAside() -> String? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    let bytes = Int64(info.st_size) <= Int64(Self.maximumSize) ? (try? Self.readBytes(path)) ?? nil : nil
    let target = bytes.map(backupPath(for:)) ?? path + ".corrupt-size\(info.st_size)-inode\(info.st_ino)"
    do {
      try Self.move(path, over: target)
      return target
    } catch {
      return nil
    }
  }

  /// A small regular file's bytes (for comparing backups), never following a link.
  static func readBytes(_ path: String) throws(SuiteFileProblem) -> Data? {
    let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      if errno == ENOENT { return nil }
      throw .cannotRead(String(cString: strerror(errno)))
    }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { throw .cannotRead(String(cString: strerror(errno))) }
    try requireRegularFile(info)
    return try readAll(descriptor, limit: maximumSize)
  }
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  write(descriptor, buffer, count)
}
