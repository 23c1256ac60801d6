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

  /// The suite's plist file, when known.
  @_spi(Tools) public var fileURL: URL? {
    hub.file.map { URL(fileURLWithPath: $0.path) }
  }

  /// Writes many keys at once, keeping the suite's other keys: all of them or none. On Linux they go straight into
  /// the suite's file in one atomic save, so 100,000 keys cost one save instead of 100,000 writes; observers of
  /// changed keys are told afterwards.
  ///
  /// - Parameter entries: The keys and their values (empty key names are skipped).
  /// - Throws: ``DefaultsError/saveFailed(path:reason:)``; ``DefaultsError/encodingFailed(key:type:reason:)`` for text
  ///   a file store's XML cannot carry. The file is then as it was.
  @_spi(Tools) public func importEntries(_ entries: [PropertyListKey: PropertyListValue]) throws(DefaultsError) {
    for (key, value) in entries {
      if let refusal = hub.storage.refusal(of: .set(value), forKey: key.string, type: value.kindName) { throw refusal }
    }
    try hub.merge(entries.filter { !$0.key.string.isEmpty })
  }

  /// Every key and value of the suite's own domain (not the registered defaults or the arguments), each key exactly
  /// as stored: two keys that differ only by Unicode normalization are two entries.
  @_spi(Tools) public var storedEntries: [PropertyListKey: PropertyListValue] {
    hub.storage.snapshot()
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
