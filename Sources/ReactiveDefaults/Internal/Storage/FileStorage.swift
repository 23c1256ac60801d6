import Foundation

/// A property-list file at a path the app chooses: the storage of ``DefaultsStore/init(fileURL:)``. Memory is its own
/// (``FileMemory``); the file is saved, locked, checked and reloaded by a ``SuitePersistence`` over a
/// ``PlainFileRecord``, as a suite's plist is on Linux, on every platform.
final class FileStorage: DefaultsStorage {
  private let memory: FileMemory
  let persistence: SuitePersistence?

  /// - Parameter file: The file (its folder already in the one spelling ``SuiteFile/canonicalPath(_:)`` gives).
  init(file: SuiteFile) {
    // The file's one persistence in this process (a store's hub dropped while saving hands it to the next one), whose
    // init opens the file: completes a journal a crash left, checks the file, loads it.
    let shared = SuitePersistence.shared(.fileStore(PropertyListKey(file.path))) {
      SuitePersistence(record: PlainFileRecord(file: file, memory: FileMemory()))
    }
    if let record = shared.record as? PlainFileRecord {
      memory = record.memory
      persistence = shared
    } else {
      // Not reached: a file store's identity is only ever given a file store's record.
      let memory = FileMemory()
      self.memory = memory
      persistence = SuitePersistence(record: PlainFileRecord(file: file, memory: memory))
    }
  }

  func object(forKey key: String) -> Any? {
    memory.value(forKey: PropertyListKey(key))?.foundationObject
  }

  func value(forKey key: String) -> PropertyListValue? {
    memory.value(forKey: PropertyListKey(key))
  }

  func apply(_ write: StorageWrite, forKey key: String) -> PropertyListValue? {
    let stored = write.storedValue
    memory.set(stored, forKey: PropertyListKey(key))
    return stored
  }

  func snapshot() -> [PropertyListKey: PropertyListValue] {
    memory.entries
  }

  /// Nothing but the library writes memory: other processes' saves arrive through the persistence's reloads.
  func observeExternalChanges(_ handler: @escaping @Sendable () -> Void) {}

  func observeKeyChanges(_ handler: @escaping @Sendable (String) -> Void) {}

  func keyObservation(_ key: String, changedBy delta: Int) {}

  var userDefaults: UserDefaults? { nil }

  /// A file has no platform limit but the reader's (``SuiteFile/maximumSize``), which a save enforces.
  var sizeLimit: DomainSizeBudget.Limit? { nil }

  /// Text XML 1.0 cannot carry, in the key or the value, is refused: corelibs would write it raw, which strict readers
  /// (Python's `plistlib`, `xmllint`) refuse whole, and a file store's file is for other programs too.
  func refusal(of write: StorageWrite, forKey key: String, type: String) -> DefaultsError? {
    guard let text = key.canBeCarriedByXML ? write.storedValue?.textXMLCannotCarry : key else { return nil }
    let scalar = text.unicodeScalars.first { !String($0).canBeCarriedByXML }.map {
      String($0.value, radix: 16, uppercase: true)
    }
    return .encodingFailed(
      key: key, type: type,
      reason: "U+\(String(repeating: "0", count: max(0, 4 - (scalar?.count ?? 4))) + (scalar ?? ""))"
        + (text == key ? " in the key name" : "") + " cannot be written to an XML property list (XML 1.0 forbids it); "
        + "store such text as Data")
  }
}
