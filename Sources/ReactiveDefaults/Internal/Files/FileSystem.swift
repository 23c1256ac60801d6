// Internal/Files: the file engine, on every platform. A file store's file everywhere, and a named suite's plist on
// Linux, are saved, locked, checked, reloaded and watched here. SuitePersistence runs it (SuiteSync is its state
// machine with no I/O, SaveOnExit its save at exit); a FileRecord (TrackedFile's subclasses: PlainFileRecord here,
// SuiteFileRecord in Internal/Linux) knows what memory is against the file; SuiteFile, FileSystem and
// SuiteFileProblem do the careful POSIX work. Its only platform branches are `stat`'s fields, the XML reader and
// which folder watch runs (Linux/FolderWatcher, Apple/FolderEvents).

import Foundation

// `stat` may come through another module than Glibc's (with the RxCocoa trait's packages in the build, it comes
// through CoreFoundation's or Dispatch's): its members then need that module imported too.
#if canImport(CDispatch)
  import CDispatch
#endif
#if canImport(CoreFoundation)
  import CoreFoundation
#endif
#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// What stands at a path, as a suite file's handling needs to know it (a link is never followed).
struct FileStatus: Equatable, Sendable {
  enum Kind: Equatable, Sendable {
    case regular, symbolicLink, folder, fifo, socket, device
  }

  var kind: Kind
  var stamp: SuiteFile.Stamp
}

/// The file operations under a file the library handles (a file store's on every platform, a suite's plist on
/// Linux), as values: the seam through which the persistence's decisions (journal recovery, checks and backups,
/// merges) are tested with no disk. ``posix`` is the real one; the tests' in-memory one keeps files in a dictionary
/// and fails an operation on demand.
///
/// Each operation is one the library needs, not a general file API: a read never follows a link nor blocks on a
/// FIFO; a new file is created exclusively, written whole, stamped to the nanosecond and flushed; replacing a file is
/// a rename over it.
struct FileSystem: Sendable {
  /// What is at `path`, not following a link; nil when nothing is.
  var status: @Sendable (_ path: String) -> FileStatus?
  /// The bytes of the regular file at `path`, when it holds at most `limit`; nil when nothing is there. Throws what
  /// keeps it from being read: a link, something other than a regular file, a larger file, the system's error.
  var readFile: @Sendable (_ path: String, _ limit: Int) throws(SuiteFileProblem) -> Data?
  /// Creates `path`, which must not exist (mode 0600, never through a link), holding `bytes`, with a modification
  /// time to the nanosecond, flushed to disk when `flushing`. On failure no file is left.
  var createFile: @Sendable (_ path: String, _ bytes: Data, _ flushing: Bool) throws(SaveFailure) -> Void
  /// Renames `source` over `target`, atomically.
  var rename: @Sendable (_ source: String, _ target: String) throws(SaveFailure) -> Void
  /// Removes the file at `path`, if there is one.
  var remove: @Sendable (_ path: String) -> Void
  /// Flushes a folder's entries to disk, so that a rename or a removal in it survives a power cut.
  var flushFolder: @Sendable (_ folder: String) throws(SaveFailure) -> Void
  /// Gives the regular file at `path` (never through a link), if it is still the file stamped `expected`, a
  /// modification time to the nanosecond, as ``createFile`` does, and returns its new stamp; nil when it is not that
  /// file any more (another writer changed or replaced it).
  var restamp: @Sendable (_ path: String, _ expected: SuiteFile.Stamp) throws(SaveFailure) -> SuiteFile.Stamp?
  /// Flushes the regular file at `path` (never through a link) to disk; false when nothing is there (a writer that
  /// takes no lock removed it).
  var flushFile: @Sendable (_ path: String) throws(SaveFailure) -> Bool
  /// Takes the exclusive advisory lock of the file `lockPath` (creating `folder` and the lock file when missing; the
  /// lock file must be a regular file), calling `waiting` before it waits for another holder. Returns what releases
  /// it.
  var lock:
    @Sendable (_ lockPath: String, _ folder: String, _ waiting: () -> Void) throws(SaveFailure) ->
      @Sendable () -> Void
  /// Calls `onChange` after changes to the file `fileName` in `folder` (any file of it, for an empty `fileName`; or to
  /// the folder itself), until the returned watch is cancelled; nil where there is no watching. (Apple platforms
  /// tell every change of the folder's entries whatever the name.)
  var watch: @Sendable (_ folder: String, _ fileName: String, _ onChange: @escaping @Sendable () -> Void) -> FileWatch?
}

/// A watch of one file (``FileSystem/watch``), ended by ``cancel()``.
final class FileWatch: Sendable {
  private let end: @Sendable () -> Void

  init(_ end: @escaping @Sendable () -> Void) {
    self.end = end
  }

  func cancel() { end() }
}

extension FileSystem {
  /// The real file system, through POSIX calls.
  static let posix = FileSystem(
    status: { path in
      var info = stat()
      guard lstat(path, &info) == 0 else { return nil }
      return FileStatus(info)
    },
    readFile: { path, limit throws(SuiteFileProblem) in try POSIXFiles.read(path, limit: limit) },
    createFile: { path, bytes, flushing throws(SaveFailure) in try POSIXFiles.create(path, bytes, flushing: flushing) },
    rename: { source, target throws(SaveFailure) in
      guard Foundation.rename(source, target) == 0 else {
        throw SaveFailure(operation: "cannot rename \(source) to \(target)")
      }
    },
    remove: { path in unlink(path) },
    flushFolder: { folder throws(SaveFailure) in
      let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      guard descriptor >= 0 else { throw SaveFailure(operation: "cannot open the folder \(folder)") }
      defer { close(descriptor) }
      guard fsync(descriptor) == 0 else { throw SaveFailure(operation: "cannot flush the folder \(folder)") }
    },
    restamp: { path, expected throws(SaveFailure) in
      let descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
      guard descriptor >= 0 else { throw SaveFailure(operation: "cannot open \(path)") }
      defer { close(descriptor) }
      var info = stat()
      guard fstat(descriptor, &info) == 0 else { throw SaveFailure(operation: "cannot read the status of \(path)") }
      guard SuiteFile.Stamp(info) == expected else { return nil }
      try POSIXFiles.stamp(descriptor, path)
      guard fstat(descriptor, &info) == 0 else { throw SaveFailure(operation: "cannot read the status of \(path)") }
      return SuiteFile.Stamp(info)
    },
    flushFile: { path throws(SaveFailure) in
      let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
      if descriptor < 0 && errno == ENOENT { return false }
      guard descriptor >= 0 else { throw SaveFailure(operation: "cannot open \(path)") }
      defer { close(descriptor) }
      guard fsync(descriptor) == 0 else { throw SaveFailure(operation: "cannot flush \(path) to disk") }
      return true
    },
    lock: { lockPath, folder, waiting throws(SaveFailure) in
      try POSIXFiles.lock(lockPath, folder: folder, waiting: waiting)
    },
    watch: { folder, fileName, onChange in
      #if os(Linux)
        guard let subscription = FolderWatcher.subscribe(folder: folder, fileName: fileName, onChange: onChange)
        else { return nil }
        return FileWatch { subscription.cancel() }
      #elseif canImport(Darwin)
        FolderEvents.watch(folder: folder, onChange: onChange)
      #else
        nil
      #endif
    })
}

extension FileSystem {
  /// Calls `onChange` with the names of the files of `folder` that were written, replaced or removed, until the
  /// returned watch is cancelled: nil names when any may have changed (where the platform's watch tells no names,
  /// as Apple's does not, or events were lost). Names are as the file system spells them (two that differ only by
  /// Unicode normalization are two files). Nil where there is no watching.
  static func watchNames(_ folder: String, _ onChange: @escaping @Sendable (Set<PropertyListKey>?) -> Void)
    -> FileWatch?
  {
    #if os(Linux)
      guard let subscription = FolderWatcher.subscribe(folder: folder, onNames: onChange) else { return nil }
      return FileWatch { subscription.cancel() }
    #else
      return posix.watch(folder, "") { onChange(nil) }
    #endif
  }
}

extension FileStatus {
  init(_ info: stat) {
    let kind: Kind
    switch info.st_mode & S_IFMT {
    case S_IFREG: kind = .regular
    case S_IFLNK: kind = .symbolicLink
    case S_IFDIR: kind = .folder
    case S_IFIFO: kind = .fifo
    case S_IFSOCK: kind = .socket
    default: kind = .device
    }
    self.init(kind: kind, stamp: SuiteFile.Stamp(info))
  }
}

/// The POSIX calls behind ``FileSystem/posix``.
private enum POSIXFiles {
  static func read(_ path: String, limit: Int) throws(SuiteFileProblem) -> Data? {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      if errno == ENOENT { return nil }
      throw .cannotRead(String(cString: strerror(errno)))
    }
    try requireRegularFile(info)
    guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge(Int64(info.st_size)) }
    let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      if errno == ENOENT { return nil }
      throw errno == ELOOP ? .symbolicLink : .cannotRead(String(cString: strerror(errno)))
    }
    defer { close(descriptor) }
    // The name may have been replaced between lstat and open: judge what was opened.
    guard fstat(descriptor, &info) == 0 else { throw .cannotRead(String(cString: strerror(errno))) }
    try requireRegularFile(info)
    guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge(Int64(info.st_size)) }
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

  static func requireRegularFile(_ info: stat) throws(SuiteFileProblem) {
    switch FileStatus(info).kind {
    case .regular: return
    case .symbolicLink: throw .symbolicLink
    case .folder: throw .notAFile(SuiteFileProblem.folder)
    case .fifo: throw .notAFile("a FIFO")
    case .socket: throw .notAFile("a socket")
    case .device: throw .notAFile("a device")
    }
  }

  static func create(_ target: String, _ bytes: Data, flushing: Bool) throws(SaveFailure) {
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
    // milliseconds, so two saves in one tick, of one size, the second into the inode the first freed, would look like
    // one file (``SuiteFile/Stamp``), and a process would take another's newer save for its own older one.
    if failure == nil {
      do { try stamp(descriptor, target) } catch { failure = error }
    }
    if failure == nil && flushing && fsync(descriptor) != 0 {
      failure = SaveFailure(operation: "cannot flush \(target) to disk")
    }
    if close(descriptor) != 0 && failure == nil { failure = SaveFailure(operation: "cannot close \(target)") }
    if let failure {
      unlink(target)
      throw failure
    }
  }

  /// Sets the modification time of the open file to now, to the nanosecond.
  static func stamp(_ descriptor: Int32, _ path: String) throws(SaveFailure) {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var times = [now, now]
    guard futimens(descriptor, &times) == 0 else {
      throw SaveFailure(operation: "cannot set the modification time of \(path)")
    }
  }

  static func lock(_ lockPath: String, folder: String, waiting: () -> Void) throws(SaveFailure) -> @Sendable () -> Void
  {
    while true {
      let descriptor = try openLock(lockPath, folder: folder)
      // Uncontended (the common case): one call. Else the wait is announced, then waited out.
      if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
        guard errno == EWOULDBLOCK || errno == EINTR else {
          let failure = SaveFailure(operation: "cannot lock \(lockPath)")
          close(descriptor)
          throw failure
        }
        waiting()
        while flock(descriptor, LOCK_EX) != 0 {
          guard errno == EINTR else {
            let failure = SaveFailure(operation: "cannot lock \(lockPath)")
            close(descriptor)
            throw failure
          }
        }
      }
      // The lock file may have been removed (or replaced) while this waited: a lock on a file no longer at the
      // path excludes nobody who opens the path now. It is then taken again, on the file that is there.
      var held = stat()
      var current = stat()
      if fstat(descriptor, &held) == 0, stat(lockPath, &current) == 0, held.st_ino == current.st_ino,
        held.st_dev == current.st_dev
      {
        return {
          flock(descriptor, LOCK_UN)
          close(descriptor)
        }
      }
      flock(descriptor, LOCK_UN)
      close(descriptor)
    }
  }

  private static func openLock(_ lockPath: String, folder: String) throws(SaveFailure) -> Int32 {
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

private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
  read(descriptor, buffer, count)
}

private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  write(descriptor, buffer, count)
}
