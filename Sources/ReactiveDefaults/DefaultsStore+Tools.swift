public import Foundation

extension DefaultsStore {
  /// An in-memory store that keeps iOS's size limit on its suite, as the library does on iOS, iPadOS, watchOS and
  /// visionOS (for the benchmark, which measures what that costs a write on Linux).
  @_spi(Tools) public static func inMemoryLimitedAsOnIOS() -> DefaultsStore {
    let storage = MemoryStorage(behavior: .init(sizeLimit: .embedded))
    return DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
  }

  /// Calls `onChange` each time another process (or anything else) rewrites the suite's plist, until the
  /// returned token ends. For tools that watch a whole domain; nil where the suite has no known file or
  /// on platforms without file watching.
  ///
  /// - Parameter onChange: Called on a background thread after the suite was reloaded from disk.
  /// - Returns: The token that keeps the watch alive.
  @_spi(Tools) public func watchSuiteFile(_ onChange: @escaping @Sendable () -> Void) -> DefaultsObservation? {
    hub.persistence?.watchFile(onChange)
  }

  /// Tells `handler` what each save of a suite file in this process did: where its content came from, its writes,
  /// whether another process had changed the file, what corelibs' save left, and the file's entries after it (for
  /// reading a history the multi-process checker flags; nil stops).
  @_spi(Tools) public static func traceSaves(_ handler: (@Sendable (String) -> Void)?) {
    SuiteFile.saveTrace.withLock { $0 = handler }
  }

  /// Saves every suite and file store of this process that has writes not yet saved, released stores included, and
  /// waits for the saves already running: what a normal exit does (for the multi-process checker, whose workers
  /// release stores and must have saved everything before the files are read).
  @_spi(Tools) public static func saveEverything() {
    SaveOnExit.saveAll()
  }

  /// Runs `body` (plain `UserDefaults` calls) while no other thread of the library calls into corelibs' preferences
  /// (Linux; elsewhere, at once). corelibs names its copy of a suite by the user's name from `getpwuid`'s one buffer
  /// at every call, so two threads calling at once can send either call to a stray copy (Gotchas): corelibs' own race,
  /// which the history checker's plain writers take out this way, so that what it finds is the library's.
  @_spi(Tools) public static func withPreferencesTurn<T>(_ body: () -> T) -> T {
    PreferencesCalls.serialized(body)
  }

  /// When this process's last save of the store's file was complete on disk (the rename of the new file returned, or
  /// corelibs' rewrite was kept), in nanoseconds of the system's monotonic clock (`CLOCK_MONOTONIC`, which every
  /// process shares); nil before the first save, or where the store has no file of the library's (for the
  /// benchmark's cross-process latency: the writer reports this, the observer's process reads the same clock).
  @_spi(Tools) public var lastSaveCommittedNanoseconds: UInt64? {
    hub.persistence?.lastSaveCommitted
  }

  /// The suite's plist file, when known.
  @_spi(Tools) public var fileURL: URL? {
    hub.file.map { URL(fileURLWithPath: $0.path) }
  }

  /// Writes many keys at once, keeping the suite's other keys: all of them or none. On Linux they go straight into
  /// the suite's file in one atomic save, so 100,000 keys cost one save instead of 100,000 writes; observers of
  /// changed keys are told afterwards.
  ///
  /// - Parameters:
  ///   - entries: The keys and their values (empty key names are skipped).
  ///   - loadingCopy: false for a tool that reads nothing more of the suite (it exits): on Linux, corelibs' copy of
  ///     the suite is then dropped and not loaded again, which is a third of the time an import of 100,000 keys
  ///     takes. A read made later anyway finds memory marked as not the file, and reloads it when it looks at the
  ///     file.
  /// - Throws: ``DefaultsError/saveFailed(path:reason:)``; ``DefaultsError/encodingFailed(key:type:reason:)`` for text
  ///   a file store's XML cannot carry. The file is then as it was.
  @_spi(Tools) public func importEntries(
    _ entries: [PropertyListKey: PropertyListValue], loadingCopy: Bool = true
  ) throws(DefaultsError) {
    for (key, value) in entries {
      if let refusal = hub.storage.refusal(of: .set(value), forKey: key.string, type: value.kindName) { throw refusal }
    }
    try hub.merge(entries.filter { !$0.key.string.isEmpty }, loadingCopy: loadingCopy)
  }

  /// The entries of the store's file as it is saved, read once under the file's lock: what another program reading
  /// the file gets (writes of this process not yet saved are not in it: ``flush()`` first). nil where the library does
  /// not keep the file itself (a suite on Apple platforms, whose preferences daemon does: read ``storedEntries``).
  ///
  /// - Throws: ``DefaultsError/unreadableFile(path:reason:backup:)`` when the file is not a property list the library
  ///   reads; ``DefaultsError/saveFailed(path:reason:)`` when its lock cannot be taken.
  @_spi(Tools) public func savedEntries() throws(DefaultsError) -> [PropertyListKey: PropertyListValue]? {
    try hub.persistence?.savedEntries()
  }

  /// The entries of a suite's file as saved, read under the file's lock without opening a store (whose open loads the
  /// suite into corelibs and builds its merged view: most of an export of 100,000 keys). A whole journal that a
  /// killed save left is that save's content, and is read in the file's place (nothing on disk changes). nil for a
  /// suite with no file, and where the library does not keep suite files (Apple platforms): open a store then.
  ///
  /// - Throws: ``DefaultsError/unreadableFile(path:reason:backup:)`` when the file is not a property list the library
  ///   reads; ``DefaultsError/saveFailed(path:reason:)`` when its lock cannot be taken.
  @_spi(Tools) public static func savedEntries(ofSuite name: String) throws(DefaultsError)
    -> [PropertyListKey: PropertyListValue]?
  {
    #if os(Linux)
      let file = SuiteFile(suiteName: name)
      guard file.stamp() != nil else { return nil }
      var problem: SuiteFileProblem?
      let entries: [PropertyListKey: PropertyListValue]?
      do {
        entries = try file.withLock { () throws(SaveFailure) -> [PropertyListKey: PropertyListValue]? in
          do throws(SuiteFileProblem) {
            return try file.savedEntries()
          } catch {
            problem = error
            return nil
          }
        }
      } catch {
        throw file.failure(error)
      }
      if let problem { throw .unreadableFile(path: file.path, reason: problem.reason, backup: nil) }
      return entries
    #else
      return nil
    #endif
  }

  /// Every key and value of the suite's own domain (not the registered defaults or the arguments), each key exactly
  /// as stored: two keys that differ only by Unicode normalization are two entries. Follows the file as a read does
  /// (``SuitePersistence/followFile()``): a file another store or process replaced is read again.
  @_spi(Tools) public var storedEntries: [PropertyListKey: PropertyListValue] {
    hub.persistence?.followFile()
    return hub.storage.snapshot()
  }

  /// A phase of long work, as ``reportingProgress(_:_:)`` reports it.
  @_spi(Tools) public enum WorkPhase: Sendable, Equatable {
    /// Applying an import's keys to the file's (units: keys).
    case merging
    /// Sorting the keys for the file (no units: its length is not known in advance).
    case sorting
    /// Writing the keys as XML (units: keys).
    case encoding
    /// Writing the file and flushing it to disk (no units).
    case writing
    /// Foundation reading the new file into memory (no units).
    case loading
  }

  /// Runs `body`, telling `report` (on the working thread, once per 16,384 keys at most) how far long work in it has
  /// come: each call gives a phase, the units done and the units in all (0 in all: a phase that cannot count).
  @_spi(Tools) public static func reportingProgress<T>(
    _ report: @escaping @Sendable (WorkPhase, _ done: Int, _ total: Int) -> Void, _ body: () throws -> T
  ) rethrows -> T {
    try Progress.$handler.withValue(report, operation: body)
  }

  /// Removes the whole suite: every key (observers are told) and its plist file.
  ///
  /// - Throws: ``DefaultsError/saveFailed(path:reason:)`` when the file could not be removed.
  @_spi(Tools) public func removeSuite() throws(DefaultsError) {
    for key in hub.storage.snapshot().keys { hub.write(.remove, forKey: key.string) }
    // An empty domain is saved as no file at all, as corelibs does.
    try hub.save()
  }

  /// The folder of the platform's preferences files: `$XDG_CONFIG_HOME` (when absolute) or `~/.config` on Linux,
  /// `~/Library/Preferences` on Apple platforms.
  @_spi(Tools) public static var preferencesFolder: String {
    #if canImport(Darwin)
      NSHomeDirectory() + "/Library/Preferences"
    #else
      SuiteFile.preferencesFolder
    #endif
  }

  /// Why ``init(suiteName:)`` refuses a valid name, in words: the suite's plist is a FIFO, a socket or a device
  /// (Linux); nil otherwise.
  @_spi(Tools) public static func suiteFileRefusal(_ name: String) -> String? {
    SuiteFile.specialFile(ofSuite: name)
  }

  /// A domain as the XML property list CoreFoundation writes for it (keys sorted by UTF-16 code units, each kept
  /// exactly as given).
  @_spi(Tools) public static func xmlPropertyList(_ entries: [PropertyListKey: PropertyListValue]) -> Data {
    SuiteFile.encode(entries)
  }

  /// The largest preferences file the library reads, imports or backs up: 64 MiB.
  @_spi(Tools) public static var maximumFileSize: Int { SuiteFile.maximumSize }

  /// The domain a property list holds, read as carefully as a suite file: binary plists through the library's
  /// strict reader (no crash on malformed input, nesting and expansion limited), at most ``maximumFileSize``.
  ///
  /// - Throws: ``DefaultsError/unreadableFile(path:reason:backup:)`` (with an empty path) saying what is wrong.
  @_spi(Tools) public static func domain(fromPropertyList data: Data) throws(DefaultsError)
    -> [PropertyListKey: PropertyListValue]
  {
    guard data.count <= SuiteFile.maximumSize else {
      throw .unreadableFile(path: "", reason: SuiteFileProblem.tooLarge(Int64(data.count)).reason, backup: nil)
    }
    do {
      return try SuiteFile.parseDomain(data)
    } catch {
      throw .unreadableFile(path: "", reason: error.reason, backup: nil)
    }
  }
}
