import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where corelibs Foundation keeps a suite's plist, and the advisory lock taken around its saves and reloads.
struct SuiteFile: Sendable {
  /// The folder: `$XDG_CONFIG_HOME` when it is absolute, else `$HOME/.config` (corelibs' rule, read from the
  /// environment the process started with, as corelibs does).
  let folder: String
  /// The plist's file name, `<suite>.plist`.
  let fileName: String

  var path: String { folder + "/" + fileName }
  var domainName: String { String(fileName.dropLast(".plist".count)) }
  var lockPath: String { path + ".lock" }

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

  /// The file's stamp, or nil when there is no file.
  func stamp() -> Stamp? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    #if canImport(Darwin)
      return Stamp(
        size: Int64(info.st_size), modified: info.st_mtimespec.tv_sec, modifiedNanoseconds: info.st_mtimespec.tv_nsec,
        inode: UInt64(info.st_ino))
    #else
      return Stamp(
        size: Int64(info.st_size), modified: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec,
        inode: UInt64(info.st_ino))
    #endif
  }

  /// What is wrong with an unreadable file, and whether corelibs could crash on it (a malformed binary plist).
  struct Problem {
    var reason: String
    var endangersReaders = false
  }

  /// Why the file cannot serve as the suite's domain, or nil when it can (or does not exist).
  func problem() -> Problem? {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return nil }
    if isFolder.boolValue { return Problem(reason: "is a folder, not a file") }
    guard let data = FileManager.default.contents(atPath: path) else { return Problem(reason: "cannot be read") }
    if data.isEmpty { return Problem(reason: "is empty") }
    if data.starts(with: Array("bplist".utf8)) {
      // Never corelibs' binary parser on a file that may be anything: it crashes on some malformed input.
      guard let root = BinaryPropertyList.parse(data) else {
        return Problem(reason: "is not a property list", endangersReaders: true)
      }
      guard case .dictionary = root else { return Problem(reason: "holds no dictionary") }
      return nil
    }
    guard let root = try? PropertyListSerialization.propertyList(from: data, format: nil) else {
      return Problem(reason: "is not a property list")
    }
    guard case .dictionary? = PropertyListValue(foundationObject: root) else {
      let kind = PropertyListValue(foundationObject: root)?.kindName ?? "\(type(of: root))"
      return Problem(reason: "holds \(kind == "Array" ? "an" : "a") \(kind), not a dictionary")
    }
    return nil
  }

  /// ``problem()``, asked again up to twice, 50 ms apart, while the file looks unreadable: a writer that takes no
  /// lock (plain `UserDefaults` in this or another process, whose `synchronize()` writes every suite with unsaved
  /// changes) may be halfway through it. corelibs does the same when it reads a file (3 times, 150 ms apart).
  func settledProblem() -> Problem? {
    var problem = problem()
    for _ in 0..<2 {
      guard let current = problem, current.reason != "is a folder, not a file" else { break }
      usleep(50_000)
      problem = self.problem()
    }
    return problem
  }

  /// Keeps the file's contents as `<suite>.plist.corrupt-<UTC timestamp>` beside it: a copy, or (`moving`) the
  /// file itself, so that corelibs never parses it. Returns the new path, or nil.
  func keepAside(moving: Bool) -> String? {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    let base = path + ".corrupt-" + formatter.string(from: Date())
    for attempt in 1...100 {
      let candidate = attempt == 1 ? base : base + "-\(attempt)"
      guard !FileManager.default.fileExists(atPath: candidate) else { continue }
      if moving { return rename(path, candidate) == 0 ? candidate : nil }
      return (try? FileManager.default.copyItem(atPath: path, toPath: candidate)) != nil ? candidate : nil
    }
    return nil
  }

  /// Runs `body` holding the locks of several suites, taken in the order of their paths (each once), so that
  /// processes locking overlapping sets never wait on each other in a cycle.
  static func withLocks<T>(_ files: [SuiteFile], _ body: () throws -> T) rethrows -> T {
    var seen = Set<String>()
    let ordered = files.filter { seen.insert($0.lockPath).inserted }.sorted { $0.lockPath < $1.lockPath }
    return try withLocks(ordered[...], body)
  }

  private static func withLocks<T>(_ files: ArraySlice<SuiteFile>, _ body: () throws -> T) rethrows -> T {
    guard let first = files.first else { return try body() }
    return try first.withLock { try withLocks(files.dropFirst(), body) }
  }

  /// Runs `body` holding an exclusive `flock` on the sidecar lock file beside the plist, so that saves and
  /// reloads of processes using the library never interleave. Without a lock file (an unwritable folder)
  /// `body` runs unlocked.
  func withLock<T>(_ body: () throws -> T) rethrows -> T {
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return try body() }
    defer { close(descriptor) }
    while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
    defer { flock(descriptor, LOCK_UN) }
    return try body()
  }
}
