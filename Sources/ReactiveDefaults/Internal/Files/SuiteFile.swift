import Foundation

// `stat` and `timespec` may come through another module than Glibc's (FileSystem.swift says when).
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

/// A property-list file the library handles (a file store's on every platform; on Linux also a suite's plist, where
/// corelibs Foundation keeps it), and the careful file operations the library does on it: reads
/// that never follow a link or block on a FIFO (SuiteFile+Reading.swift), atomic writes and backups
/// (SuiteFile+Writing.swift), and the advisory lock (SuiteFile+Locking.swift).
struct SuiteFile: Sendable {
  /// The folder: a file store's own; for a suite (``init(suiteName:)``), `$XDG_CONFIG_HOME` when it is absolute,
  /// else `$HOME/.config` (corelibs' rule), read from the process's environment at each `init`.
  let folder: String
  /// The file's name (a suite's: `<suite>.plist`).
  let fileName: String
  /// The file operations: the real ones, or (tests) files in memory.
  let system: FileSystem

  var path: String { folder + "/" + fileName }
  var domainName: String { String(fileName.dropLast(".plist".count)) }
  var lockPath: String { path + ".lock" }
  /// The next version of the file while a save runs (see ``TrackedFile``); renamed over the plist at its end.
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

  /// "a FIFO", "a socket" or "a device" for those kinds; nil for the others.
  static func specialFileKind(_ kind: FileStatus.Kind?) -> String? {
    switch kind {
    case .fifo?: "a FIFO"
    case .socket?: "a socket"
    case .device?: "a device"
    default: nil
    }
  }

  /// What stands where the plist of the suite `name` should be, when it is a FIFO, a socket or a device (Linux, where
  /// the library and corelibs read that plist; nil elsewhere, where the preferences daemon does).
  static func specialFile(ofSuite name: String) -> String? {
    #if os(Linux)
      let file = SuiteFile(suiteName: name)
      return specialFileKind(file.system.status(file.path)?.kind).map { "\(file.path) is \($0), not a file" }
    #else
      return nil
    #endif
  }

  init(suiteName: String) {
    self.init(folder: Self.preferencesFolder, fileName: suiteName + ".plist", system: .posix)
  }

  /// The file `fileName` in `folder`, reached through `system`.
  init(folder: String, fileName: String, system: FileSystem) {
    self.folder = folder
    self.fileName = fileName
    self.system = system
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
    stamp(of: path)
  }

  /// The stamp of the file at `path` (a link is not followed), or nil when there is none. A rename keeps it.
  func stamp(of path: String) -> Stamp? {
    system.status(path)?.stamp
  }
}

extension SuiteFile {
  /// The one spelling of the file at `path` (absolute, or relative to the working directory): the folder's symbolic
  /// links followed and `.` and `..` resolved as the system resolves them (`realpath` of the deepest folder that
  /// exists; the folders below it, which do not exist yet, resolved as written). The file itself is not followed: a
  /// link there is refused by the reader and never written through.
  static func canonicalPath(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    var components = absolute.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    let name = components.popLast() ?? ""
    var missing: [String] = []
    while true {
      let prefix = "/" + components.joined(separator: "/")
      if let resolved = realpath(prefix, nil) {
        let folder = String(cString: resolved)
        free(resolved)
        var parts = folder.split(separator: "/").map(String.init)
        for part in missing.reversed() {
          switch part {
          case ".": continue
          case "..": _ = parts.popLast()
          default: parts.append(part)
          }
        }
        return "/" + (parts + [name]).joined(separator: "/")
      }
      guard let last = components.popLast() else { return absolute }
      missing.append(last)
    }
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

extension SuiteFile {
  /// What a store reports for a save (or a lock, a reload, an edit) of this suite that failed with `failure`.
  func failure(_ failure: SaveFailure) -> DefaultsError {
    .saveFailed(path: path, reason: failure.reason)
  }
}
