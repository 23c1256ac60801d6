import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Reading a suite's file: never following a link, never blocking on a FIFO, the size checked before reading, and
/// the strict parsers (``XMLPropertyList``, ``BinaryPropertyList``).
extension SuiteFile {
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
    try read(path)
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

  /// The entries as saved: a whole journal a killed save left is that save's content, read in the file's place
  /// (nothing on disk changes); nil for no file. Call it holding the file's lock.
  func savedEntries() throws(SuiteFileProblem) -> [PropertyListKey: PropertyListValue]? {
    if journalState() == .whole { return try read(journalPath)?.entries }
    return try settledRead()?.entries
  }

  /// The domain of the file at `path`, read as ``read()`` reads the plist.
  func read(_ path: String) throws(SuiteFileProblem) -> Domain? {
    guard let bytes = try readBytes(path) else { return nil }
    return Domain(entries: try Self.parseDomain(bytes), bytes: bytes)
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
    guard let bytes = try readBytes(path) else { return .absent }
    switch XMLPropertyList.frame(bytes) {
    case .notWhole: return .needsReading
    case .emptyDictionary: return .looksWhole(firstKey: nil)
    case .dictionary(let firstKey): return .looksWhole(firstKey: firstKey)
    }
  }

  /// A regular file's bytes, no larger than ``maximumSize``: nil when there is no file. A link is never followed
  /// and a FIFO never opened blocking; the size is checked before reading.
  func readBytes(_ path: String) throws(SuiteFileProblem) -> Data? {
    try system.readFile(path, Self.maximumSize)
  }

  /// The dictionary a property list holds: binary ones through the strict reader (corelibs' binary parser crashes
  /// on some malformed input and expands reference bombs), XML through the library's fast reader when the file is of
  /// the forms it knows (``XMLPropertyListReader``), else through corelibs (which refuses nesting deeper than 511
  /// levels rather than crash, and whose XML has no shared references).
  static func parseDomain(_ bytes: Data) throws(SuiteFileProblem) -> [PropertyListKey: PropertyListValue] {
    guard !bytes.isEmpty else { throw .empty }
    let root: PropertyListValue?
    if bytes.starts(with: Array("bplist".utf8)) {
      guard let node = BinaryPropertyList.parse(bytes) else { throw .malformedBinary }
      root = PropertyListValue(archiveNode: node)
      guard root != nil else { throw .notPropertyList }
    } else if let value = XMLPropertyListReader.parse(bytes) {
      // The usual file, read at once; anything it leaves is CoreFoundation's to read, below.
      root = value
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
    guard let status = system.status(journalPath) else { return .absent }
    guard status.kind == .regular else { return status.kind == .symbolicLink ? .partial : .absent }
    do {
      return try read(journalPath) == nil ? .absent : .whole
    } catch {
      return .partial
    }
  }
}
