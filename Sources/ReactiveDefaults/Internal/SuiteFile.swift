import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where corelibs Foundation keeps a suite's plist, and the careful file operations the library does on it: reads
/// that never follow a link or block on a FIFO, atomic writes, backups, and the advisory lock.
struct SuiteFile: Sendable {
  /// The folder: `$XDG_CONFIG_HOME` when it is absolute, else `$HOME/.config` (corelibs' rule, read from the
  /// environment the process started with, as corelibs does).
  let folder: String
  /// The plist's file name, `<suite>.plist`.
  let fileName: String

  var path: String { folder + "/" + fileName }
  var domainName: String { String(fileName.dropLast(".plist".count)) }
  var lockPath: String { path + ".lock" }
  /// The next version of the file while a save runs (see ``SuiteStorage``); renamed over the plist at its end.
  var journalPath: String { path + ".journal" }

  /// The largest suite file read, imported or backed up (64 MiB): corelibs would read any size, and a 1 GiB file
  /// took it 35 s and 4 GB of memory.
  static let maximumSize = 64 << 20

  static var preferencesFolder: String {
    let environment = ProcessInfo.processInfo.environment
    if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
    return NSHomeDirectory() + "/.config"
  }

  /// The domain name of `UserDefaults.standard`: the bundle identifier, else the executable's name.
  static var standardDomainName: String {
    Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
  }

  init(suiteName: String) {
    folder = Self.preferencesFolder
    fileName = suiteName + ".plist"
  }

  /// What identifies one version of the file cheaply: a check is repeated only when this changes.
  struct Stamp: Equatable, Sendable {
    var size: Int64
    var modified: Int
    var modifiedNanoseconds: Int
    var inode: UInt64
  }

  /// The stamp of the plist itself (a link is not followed), or nil when there is none.
  func stamp() -> Stamp? {
    Self.stamp(of: path)
  }

  /// The stamp of the file at `path` (a link is not followed), or nil when there is none. A rename keeps it.
  static func stamp(of path: String) -> Stamp? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return Stamp(info)
  }

  // MARK: Reading

  /// The suite's keys and values as a file holds them.
  struct Domain: Sendable {
    var entries: [PropertyListKey: PropertyListValue]
    /// The file's bytes, compared after a save to see whether corelibs' own write added anything.
    var bytes: Data
  }

  /// Reads the plist: nil when there is none, else its domain, or the problem that keeps it from being one. A link
  /// is never followed and a FIFO never opened blocking; the size is checked before reading.
  func read() throws(SuiteFileProblem) -> Domain? {
    try Self.read(path)
  }

  /// ``read()``, asked again up to twice, 50 ms apart, while the content looks unreadable: a writer that takes no
  /// lock (plain `UserDefaults` in this or another process rewrites the file in place) may be halfway through it.
  /// corelibs does the same when it reads a file (3 times, 150 ms apart).
  func settledRead() throws(SuiteFileProblem) -> Domain? {
    var attempt = 0
    while true {
      do {
        return try read()
      } catch {
        attempt += 1
        guard error.mayBeAWriteInProgress, attempt < 3 else { throw error }
        usleep(50_000)
      }
    }
  }

  static func read(_ path: String) throws(SuiteFileProblem) -> Domain? {
    guard let bytes = try readChecked(path) else { return nil }
    return Domain(entries: try parseDomain(bytes), bytes: bytes)
  }

  /// What a quick look at the plist found (``glance()``).
  enum Glance {
    case absent
    /// An XML property list whose frame is whole: it begins as a plist whose root is a dictionary and ends with
    /// the dictionary's and the plist's closing tags. Not parsed. `firstKey`: the key the file names first (nil
    /// for an empty dictionary), which a reader that parsed the file must have.
    case looksWhole(firstKey: String?)
    /// Anything else: to be read in full (``settledRead()``).
    case needsReading
  }

  /// Reads the plist's bytes, with the checks of ``read()``, and looks at the frame of an XML one only: parsing
  /// 10,000 keys costs more than a new process spends opening the suite otherwise, and corelibs' own XML parser,
  /// which reads the file next, refuses bad input without crashing. A binary plist is always read in full (corelibs'
  /// binary parser can crash), and so is any file that is cut short, not XML, or whose root is not a dictionary.
  func glance() throws(SuiteFileProblem) -> Glance {
    guard let bytes = try Self.readChecked(path) else { return .absent }
    switch XMLPropertyList.frame(bytes) {
    case .notWhole: return .needsReading
    case .emptyDictionary: return .looksWhole(firstKey: nil)
    case .dictionary(let firstKey): return .looksWhole(firstKey: firstKey)
    }
  }

  /// A regular file's bytes, no larger than ``maximumSize``: nil when there is no file. A link is never followed
  /// and a FIFO never opened blocking; the size is checked before reading.
  private static func readChecked(_ path: String) throws(SuiteFileProblem) -> Data? {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      if errno == ENOENT { return nil }
      throw .cannotRead(String(cString: strerror(errno)))
    }
    try Self.requireRegularFile(info)
    guard Int64(info.st_size) <= Int64(maximumSize) else { throw .tooLarge(Int64(info.st_size)) }
    let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      if errno == ENOENT { return nil }
      throw errno == ELOOP ? .symbolicLink : .cannotRead(String(cString: strerror(errno)))
    }
    defer { close(descriptor) }
    // The name may have been replaced between lstat and open: judge what was opened.
    guard fstat(descriptor, &info) == 0 else { throw .cannotRead(String(cString: strerror(errno))) }
    try Self.requireRegularFile(info)
    guard Int64(info.st_size) <= Int64(maximumSize) else { throw .tooLarge(Int64(info.st_size)) }
    return try readAll(descriptor, limit: maximumSize)
  }

  private static func requireRegularFile(_ info: stat) throws(SuiteFileProblem) {
    switch info.st_mode & S_IFMT {
    case S_IFREG: return
    case S_IFLNK: throw .symbolicLink
    case S_IFDIR: throw .notAFile(SuiteFileProblem.folder)
    case S_IFIFO: throw .notAFile("a FIFO")
    case S_IFSOCK: throw .notAFile("a socket")
    default: throw .notAFile("a device")
    }
  }

  private static func readAll(_ descriptor: Int32, limit: Int) throws(SuiteFileProblem) -> Data {
    var bytes = Data()
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw .cannotRead(String(cString: strerror(errno)))
      }
      if count == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<count])
      // The file grew while being read.
      guard bytes.count <= limit else { throw .tooLarge(Int64(bytes.count)) }
    }
  }

  /// The dictionary a property list holds: binary ones through the strict reader (corelibs' binary parser crashes
  /// on some malformed input and expands reference bombs), XML through corelibs (which refuses nesting deeper
  /// than 511 levels rather than crash, and whose XML has no shared references).
  static func parseDomain(_ bytes: Data) throws(SuiteFileProblem) -> [PropertyListKey: PropertyListValue] {
    guard !bytes.isEmpty else { throw .empty }
    let root: PropertyListValue?
    if bytes.starts(with: Array("bplist".utf8)) {
      guard let node = BinaryPropertyList.parse(bytes) else { throw .malformedBinary }
      root = PropertyListValue(archiveNode: node)
      guard root != nil else { throw .notPropertyList }
    } else {
      #if os(Linux)
        // CoreFoundation's own dictionary, read key by key (PropertyListSerialization would merge keys that differ
        // only by Unicode normalization).
        let parsed = CorelibsPreferences.propertyList(from: bytes)
      #else
        let parsed = try? PropertyListSerialization.propertyList(from: bytes, format: nil)
      #endif
      guard let object = parsed else { throw .notPropertyList }
      root = PropertyListValue(foundationObject: object)
    }
    guard case .dictionary(let entries)? = root else { throw .notDictionary(root?.kindName ?? "other object") }
    return entries
  }

  /// What a save left at ``journalPath``.
  enum JournalState {
    case absent
    /// Written and flushed: the newest version of the file, to be renamed over it.
    case whole
    /// Cut short (or not a file of ours): to be removed.
    case partial
  }

  func journalState() -> JournalState {
    var info = stat()
    guard lstat(journalPath, &info) == 0 else { return .absent }
    guard info.st_mode & S_IFMT == S_IFREG else {
      return info.st_mode & S_IFMT == S_IFLNK ? .partial : .absent
    }
    do {
      return try Self.read(journalPath) == nil ? .absent : .whole
    } catch {
      return .partial
    }
  }

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
  private static func readBytes(_ path: String) throws(SuiteFileProblem) -> Data? {
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

  // MARK: Locking

  /// Runs `body` holding an exclusive `flock` on the sidecar lock file beside the plist, so that saves and
  /// reloads of processes using the library never interleave. The lock file is created if needed (with its
  /// folder), never through a link, and must be a regular file.
  func withLock<T>(_ body: () throws(SaveFailure) -> T) throws(SaveFailure) -> T {
    let descriptor = try openLock(creating: true)
    defer { close(descriptor) }
    // Uncontended (the common case): one call. Else the wait is announced (to tests), then waited out.
    if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
      guard errno == EWOULDBLOCK || errno == EINTR else { throw SaveFailure(operation: "cannot lock \(lockPath)") }
      Self.lockWaits.withLock { $0 }?(lockPath)
      while flock(descriptor, LOCK_EX) != 0 {
        guard errno == EINTR else { throw SaveFailure(operation: "cannot lock \(lockPath)") }
      }
    }
    defer { flock(descriptor, LOCK_UN) }
    return try body()
  }

  /// Told the lock file's path each time a thread of this process is about to wait for a suite's lock that another
  /// holder has (tests use it to let a waiter in at a chosen moment: no event tells that a thread waits in `flock`).
  static let lockWaits = Locked<(@Sendable (String) -> Void)?>(nil)

  private func openLock(creating: Bool) throws(SaveFailure) -> Int32 {
    var info = stat()
    if stat(folder, &info) != 0 {
      guard errno == ENOENT else { throw SaveFailure(operation: "cannot use the folder \(folder)") }
      do {
        try FileManager.default.createDirectory(
          atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
      } catch {
        // The system's reason (errno of the failed mkdir), which Foundation's error gives only as a Cocoa code.
        throw SaveFailure(operation: "cannot create the folder \(folder)")
      }
    }
    let descriptor = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
      if errno == ELOOP { throw SaveFailure("the lock file \(lockPath) is a symbolic link; it was left alone") }
      throw SaveFailure(operation: "cannot open the lock file \(lockPath)")
    }
    guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      throw SaveFailure("the lock file \(lockPath) is not a regular file; it was left alone")
    }
    return descriptor
  }
}

extension SuiteFile.Stamp {
  init(_ info: stat) {
    #if canImport(Darwin)
      self.init(
        size: Int64(info.st_size), modified: info.st_mtimespec.tv_sec, modifiedNanoseconds: info.st_mtimespec.tv_nsec,
        inode: UInt64(info.st_ino))
    #else
      self.init(
        size: Int64(info.st_size), modified: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec,
        inode: UInt64(info.st_ino))
    #endif
  }
}

private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
  read(descriptor, buffer, count)
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  write(descriptor, buffer, count)
}

/// Why a suite file cannot serve as the suite's domain.
enum SuiteFileProblem: Error, Equatable, Sendable {
  static let folder = "a folder"

  /// The plist is a symbolic link: never followed, never written through.
  case symbolicLink
  /// A folder, FIFO, socket or device stands where the plist should be.
  case notAFile(String)
  /// Larger than ``SuiteFile/maximumSize``.
  case tooLarge(Int64)
  /// The file could not be opened or read (the reason from the system).
  case cannotRead(String)
  case empty
  case notPropertyList
  /// A binary plist the strict reader refuses: malformed, nested too deep, or expanding past its budget. corelibs
  /// could crash or hang on it.
  case malformedBinary
  /// A property list whose root is not a dictionary (the kind it is).
  case notDictionary(String)

  var reason: String {
    switch self {
    case .symbolicLink: "is a symbolic link; the library neither follows nor replaces it"
    case .notAFile(let kind): "is \(kind), not a file"
    case .tooLarge(let size):
      "is \(size) bytes, more than the \(SuiteFile.maximumSize >> 20) MiB a preferences file may have"
    case .cannotRead(let reason): "cannot be read: \(reason)"
    case .empty: "is empty"
    case .notPropertyList: "is not a property list"
    case .malformedBinary: "is a binary property list that is malformed, too deep or too large when expanded"
    case .notDictionary(let kind):
      "holds \(kind.first.map { "AEIOU".contains($0) } == true ? "an" : "a") \(kind), not a dictionary"
    }
  }

  /// The content may be a write in progress by a writer that takes no lock.
  var mayBeAWriteInProgress: Bool {
    switch self {
    case .empty, .notPropertyList, .malformedBinary, .notDictionary: true
    default: false
    }
  }

  /// The library leaves the path alone: it is no file of ours to read, back up or replace.
  var isLeftAlone: Bool {
    switch self {
    case .symbolicLink, .notAFile, .cannotRead: true
    default: false
    }
  }

  /// corelibs could crash or hang reading it, so it must be out of the way before corelibs does.
  var endangersReaders: Bool {
    switch self {
    case .malformedBinary, .tooLarge: true
    default: false
    }
  }
}

/// Why a save failed: the message says which operation on which path, and the system's reason.
struct SaveFailure: Error, Sendable {
  var reason: String

  init(_ reason: String) {
    self.reason = reason
  }

  /// A failure of a system call, described with `errno`.
  init(operation: String) {
    let code = errno
    reason = operation + ": " + String(cString: strerror(code))
  }
}

extension PropertyListValue {
  /// What the strict binary reader found, when it is property-list data (no null, no archive reference).
  init?(archiveNode node: ArchiveNode) {
    switch node {
    case .null, .reference: return nil
    case .bool(let value): self = .bool(value)
    case .integer(let value): self = .integer(value)
    case .real(let value): self = .real(value)
    case .date(let value): self = .date(Date(timeIntervalSinceReferenceDate: value))
    case .string(let value): self = .string(value)
    case .data(let value): self = .data(value)
    case .array(let items):
      var values: [PropertyListValue] = []
      values.reserveCapacity(items.count)
      for item in items {
        guard let value = PropertyListValue(archiveNode: item) else { return nil }
        values.append(value)
      }
      self = .array(values)
    case .dictionary(let entries):
      var values: [PropertyListKey: PropertyListValue] = [:]
      values.reserveCapacity(entries.count)
      for (key, item) in entries {
        guard let value = PropertyListValue(archiveNode: item) else { return nil }
        values[key] = value
      }
      self = .dictionary(values)
    }
  }
}
