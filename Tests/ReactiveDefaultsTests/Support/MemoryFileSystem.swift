import Foundation

@testable import ReactiveDefaults

/// Files in memory behind the library's file seam (``FileSystem``): the persistence's decisions (journal recovery,
/// checks and backups, merges) run with no disk, an operation fails when a test says so, and a test stops "the
/// process" between any two operations by failing the next one. Paths are plain strings; a folder exists once made
/// (``makeFolder(_:)``, or by taking a lock in it, as the real lock does).
final class MemoryFileSystem: Sendable {
  enum Node: Equatable {
    case file(Data)
    case symbolicLink
    case folder
    case fifo
  }

  /// An operation that can be made to fail.
  enum Operation: Hashable {
    case create, rename, flushFolder, restamp, flushFile, lock
  }

  private struct Entry {
    var node: Node
    var inode: UInt64
    var modified: Int
  }

  private struct State {
    var entries: [String: Entry] = [:]
    var nextInode: UInt64 = 1
    var clock = 0
    var failing: [Operation: String] = [:]
    var calls: [Operation: Int] = [:]
    /// Paths removed just before the next renames, one per rename, as a program that takes no lock would.
    var removedBeforeRenames: [String] = []
    var watchers: [String: [UInt64: @Sendable () -> Void]] = [:]
    var nextWatcher: UInt64 = 0

    mutating func put(_ node: Node, at path: String) -> [@Sendable () -> Void] {
      clock += 1
      nextInode += 1
      entries[path] = Entry(node: node, inode: nextInode, modified: clock)
      return handlers(of: path)
    }

    func handlers(of path: String) -> [@Sendable () -> Void] {
      Array((watchers[path] ?? [:]).values)
    }

    /// The failure asked for the next call of `operation`, taken.
    mutating func failure(_ operation: Operation) -> SaveFailure? {
      calls[operation, default: 0] += 1
      return failing.removeValue(forKey: operation).map { SaveFailure($0) }
    }
  }

  private let state = Locked(State())
  private let locks = Locked<[String: NSLock]>([:])
  /// Whether a watch of a folder that does not exist fails, as Apple's `DispatchSource` on a folder does (Linux's
  /// watcher waits for such a folder through the nearest one above it).
  private let watchesOnlyExistingFolders: Bool

  init(watchesOnlyExistingFolders: Bool = false) {
    self.watchesOnlyExistingFolders = watchesOnlyExistingFolders
  }

  // MARK: What tests set up and look at

  func makeFolder(_ path: String) {
    _ = state.withLock { $0.put(.folder, at: path) }
  }

  /// Puts `node` at `path` (its folder must have been made), as another program would.
  func put(_ node: Node, at path: String) {
    let handlers = state.withLock { $0.put(node, at: path) }
    for handler in handlers { handler() }
  }

  /// What is at `path`.
  func node(at path: String) -> Node? {
    state.withLock { $0.entries[path]?.node }
  }

  /// The paths of everything in `folder`, sorted.
  func contents(of folder: String) -> [String] {
    state.withLock { state in
      state.entries.keys.filter { ($0 as NSString).deletingLastPathComponent == folder }.sorted()
    }
  }

  /// Makes the next call of `operation` fail with `reason`.
  func failNext(_ operation: Operation, _ reason: String = "injected failure") {
    state.withLock { $0.failing[operation] = reason }
  }

  /// Removes `path` just before each of the next `times` renames, as a program that takes no lock would (a
  /// file-sync tool emptying the folder between a save's write and its rename).
  func removeBeforeNextRenames(_ path: String, times: Int = 1) {
    state.withLock { $0.removedBeforeRenames += Array(repeating: path, count: times) }
  }

  /// How many times `operation` was called.
  func calls(_ operation: Operation) -> Int {
    state.withLock { $0.calls[operation, default: 0] }
  }

  // MARK: The seam

  var fileSystem: FileSystem {
    FileSystem(
      status: { [self] path in status(path) },
      readFile: { [self] path, limit throws(SuiteFileProblem) in try read(path, limit: limit) },
      createFile: { [self] path, bytes, _ throws(SaveFailure) in try create(path, bytes) },
      rename: { [self] source, target throws(SaveFailure) in try rename(source, target) },
      remove: { [self] path in remove(path) },
      flushFolder: { [self] folder throws(SaveFailure) in
        if let failure = state.withLock({ $0.failure(.flushFolder) }) { throw failure }
        guard node(at: folder) == .folder else { throw SaveFailure("cannot open the folder \(folder)") }
      },
      restamp: { [self] path, expected throws(SaveFailure) in try restamp(path, expected) },
      flushFile: { [self] path throws(SaveFailure) in
        if let failure = state.withLock({ $0.failure(.flushFile) }) { throw failure }
        switch node(at: path) {
        case nil: return false
        case .file?: return true
        default: throw SaveFailure("cannot open \(path)")
        }
      },
      lock: { [self] lockPath, folder, waiting throws(SaveFailure) in try lock(lockPath, folder: folder, waiting) },
      watch: { [self] folder, fileName, onChange in
        if watchesOnlyExistingFolders && node(at: folder) != .folder { return nil }
        return watch(folder + "/" + fileName, onChange)
      })
  }

  private static func normalized(_ path: String) -> String {
    path.hasSuffix("/.") ? String(path.dropLast(2)) : path
  }

  private func status(_ path: String) -> FileStatus? {
    state.withLock { state in
      guard let entry = state.entries[Self.normalized(path)] else { return nil }
      let kind: FileStatus.Kind
      var size = 0
      switch entry.node {
      case .file(let bytes):
        kind = .regular
        size = bytes.count
      case .symbolicLink: kind = .symbolicLink
      case .folder: kind = .folder
      case .fifo: kind = .fifo
      }
      return FileStatus(
        kind: kind,
        stamp: SuiteFile.Stamp(size: Int64(size), modified: entry.modified, modifiedNanoseconds: 0, inode: entry.inode))
    }
  }

  private func read(_ path: String, limit: Int) throws(SuiteFileProblem) -> Data? {
    switch node(at: path) {
    case nil: return nil
    case .file(let bytes):
      guard bytes.count <= limit else { throw .tooLarge(Int64(bytes.count)) }
      return bytes
    case .symbolicLink: throw .symbolicLink
    case .folder: throw .notAFile(SuiteFileProblem.folder)
    case .fifo: throw .notAFile("a FIFO")
    }
  }

  private func restamp(_ path: String, _ expected: SuiteFile.Stamp) throws(SaveFailure) -> SuiteFile.Stamp? {
    if let failure = state.withLock({ $0.failure(.restamp) }) { throw failure }
    guard let current = status(path), current.kind == .regular else { throw SaveFailure("cannot open \(path)") }
    guard current.stamp == expected else { return nil }
    state.withLock { state in
      state.clock += 1
      state.entries[path]?.modified = state.clock
    }
    return status(path)?.stamp
  }

  private func create(_ path: String, _ bytes: Data) throws(SaveFailure) {
    let outcome = state.withLock { state -> Result<[@Sendable () -> Void], SaveFailure> in
      if let failure = state.failure(.create) { return .failure(failure) }
      guard state.entries[(path as NSString).deletingLastPathComponent]?.node == .folder else {
        return .failure(SaveFailure("cannot create \(path): No such file or directory"))
      }
      guard state.entries[path] == nil else { return .failure(SaveFailure("cannot create \(path): File exists")) }
      return .success(state.put(.file(bytes), at: path))
    }
    for handler in try outcome.get() { handler() }
  }

  private func rename(_ source: String, _ target: String) throws(SaveFailure) {
    let outcome = state.withLock { state -> Result<[@Sendable () -> Void], SaveFailure> in
      if let failure = state.failure(.rename) { return .failure(failure) }
      if !state.removedBeforeRenames.isEmpty { state.entries[state.removedBeforeRenames.removeFirst()] = nil }
      guard let entry = state.entries.removeValue(forKey: source) else {
        return .failure(SaveFailure("cannot rename \(source) to \(target): No such file or directory"))
      }
      // A rename keeps the file's inode and modification time.
      state.entries[target] = entry
      return .success(state.handlers(of: source) + state.handlers(of: target))
    }
    for handler in try outcome.get() { handler() }
  }

  private func remove(_ path: String) {
    let handlers = state.withLock { state in
      state.entries.removeValue(forKey: path) == nil ? [] : state.handlers(of: path)
    }
    for handler in handlers { handler() }
  }

  private func lock(_ lockPath: String, folder: String, _ waiting: () -> Void) throws(SaveFailure)
    -> @Sendable () -> Void
  {
    let outcome = state.withLock { state -> SaveFailure? in
      if let failure = state.failure(.lock) { return failure }
      if state.entries[folder] == nil { _ = state.put(.folder, at: folder) }
      if state.entries[lockPath] == nil { _ = state.put(.file(Data()), at: lockPath) }
      return state.entries[lockPath]?.node == .file(Data()) ? nil : SaveFailure("the lock file \(lockPath) is odd")
    }
    if let outcome { throw outcome }
    let lock = locks.withLock { locks in
      if let lock = locks[lockPath] { return lock }
      let lock = NSLock()
      locks[lockPath] = lock
      return lock
    }
    if !lock.try() {
      waiting()
      lock.lock()
    }
    return { lock.unlock() }
  }

  private func watch(_ path: String, _ onChange: @escaping @Sendable () -> Void) -> FileWatch {
    let id = state.withLock { state in
      state.nextWatcher += 1
      state.watchers[path, default: [:]][state.nextWatcher] = onChange
      return state.nextWatcher
    }
    return FileWatch { [self] in
      _ = state.withLock { $0.watchers[path]?.removeValue(forKey: id) }
    }
  }
}
