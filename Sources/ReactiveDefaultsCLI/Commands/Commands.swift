import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

enum Commands {
  typealias Failure = RDefaults.Failure

  /// The file given with `--file PATH` in the DOMAIN's place, if any: the command then works on a file store over
  /// that property list. (Passed beside the arguments, not among them, so that no path is taken for an option.)
  @TaskLocal static var targetFile: String?

  static var targetIsFile: Bool { targetFile != nil }

  /// The word that stands in the DOMAIN's place while `--file PATH` is the target.
  static let fileTargetPlaceholder = "file"

  /// How messages name the command's DOMAIN: `domain 'NAME'`, or `file 'PATH'` (escaped: a path may hold anything).
  static func target(_ domain: String) -> String {
    targetFile.map { "file '\(Formatting.escaped($0))'" } ?? "domain '\(domain)'"
  }

  /// The command line's DOMAIN as the commands that follow it show it (`--file PATH` for a file).
  static func targetArgument(_ domain: String) -> String {
    targetFile.map { "--file \(Formatting.escaped($0))" } ?? domain
  }

  /// The DOMAIN as a status line shows it: the name, or the file's path, escaped.
  static func targetName(_ domain: String) -> String {
    targetFile.map { Formatting.escaped($0) } ?? domain
  }

  // MARK: Domains

  /// Opens a domain's store. Its file was checked on opening: an unreadable file fails a command that reads it
  /// (`reading: true`), and is a warning for one that replaces it (the library keeps a backup first).
  static func openStore(_ domain: String, command: String, reading: Bool) throws -> DefaultsStore {
    let store = try targetFile.map { try openFile($0, command: command) } ?? openDomain(domain, command: command)
    let issues = Mutex<[DefaultsError]>([])
    store.issueHandler = { issue in issues.withLock { $0.append(issue) } }
    for issue in issues.withLock({ $0 }) {
      guard case .unreadableFile = issue else { continue }
      if reading { throw Failure(message: "\(issue)", hint: nil, code: .failure) }
      RDefaults.printError("Warning: \(issue)")
    }
    store.issueHandler = { issue in RDefaults.printError("Warning: \(issue)") }
    return store
  }

  /// The store of a file given with `--file PATH` (relative to the working directory).
  private static func openFile(_ path: String, command: String) throws -> DefaultsStore {
    guard !path.isEmpty, !path.hasSuffix("/"), let store = DefaultsStore(fileURL: URL(fileURLWithPath: path)) else {
      throw Failure(
        message: path.isEmpty ? "the file path is empty." : "'\(Formatting.escaped(path))' is not a file path.",
        hint: "--file takes the path of a property-list file, such as ./settings.plist. "
          + "Usage: \(Help.synopsis(of: command))", code: .usage)
    }
    return store
  }

  private static func openDomain(_ domain: String, command: String) throws -> DefaultsStore {
    if DefaultsStore.isValidSuiteName(domain), let refusal = DefaultsStore.suiteFileRefusal(domain) {
      throw Failure(
        message: "\(Formatting.escaped(refusal)).",
        hint: "Foundation would block reading it; rdefaults leaves it as it is. Remove it to use the domain.",
        code: .failure)
    }
    guard DefaultsStore.isValidSuiteName(domain), let store = DefaultsStore(suiteName: domain) else {
      throw Failure(
        message: domain.isEmpty ? "the domain name is empty." : "invalid domain name '\(Formatting.escaped(domain))'.",
        hint: "A domain name is not empty, does not start with '.' or '-', neither starts nor ends with a space, "
          + "and contains no '/', '..', control characters or glob characters (* ? [ ]). "
          + "Usage: \(Help.synopsis(of: command))", code: .usage)
    }
    return store
  }

  /// Saves the store now; a failure is the command's failure.
  static func save(_ store: DefaultsStore) throws {
    do {
      try store.save()
    } catch {
      throw Failure(
        message: "\(error)", hint: "Check the free space and the permissions of the folder.", code: .failure)
    }
  }

  /// Whether the domain exists: its file (Linux, where the library knows the file), else a non-empty persistent
  /// domain (Apple platforms, where the preferences daemon owns the files).
  static func exists(_ store: DefaultsStore) -> Bool {
    if let file = store.fileURL { return FileManager.default.fileExists(atPath: file.path) }
    return !(store.suiteName.flatMap { store.userDefaults.persistentDomain(forName: $0) } ?? [:]).isEmpty
  }

  /// The domain's keys and values as saved, each key exactly as stored (two keys that differ only by Unicode
  /// normalization are two entries).
  static func contents(_ store: DefaultsStore) -> [PropertyListKey: PropertyListValue] {
    store.storedEntries
  }

  static func missingDomain(_ domain: String) -> Failure {
    Failure(
      message: "\(target(domain)) does not exist.",
      hint: targetIsFile
        ? "A file is made by its first write: rdefaults write --file PATH KEY VALUE."
        : "Run 'rdefaults domains' to list the domains.",
      code: .failure)
  }

  /// Opens a domain that must exist (a missing one is a failure, and leaves no file behind).
  static func openExisting(_ domain: String, command: String) throws -> DefaultsStore {
    let store = try openStore(domain, command: command, reading: true)
    guard exists(store) else { throw missingDomain(domain) }
    return store
  }

  static func value(of key: String, in store: DefaultsStore, domain: String) throws -> PropertyListValue {
    guard let value = contents(store)[PropertyListKey(key)] else { throw missingKey(key, domain: domain) }
    return value
  }

  static func missingKey(_ key: String, domain: String) -> Failure {
    guard !key.isEmpty else {
      return Failure(
        message: "the key name is empty.", hint: "Run 'rdefaults read \(targetArgument(domain))' to list its keys.",
        code: .usage)
    }
    return Failure(
      message: "key '\(Formatting.escaped(key))' does not exist in \(target(domain)).",
      hint: "Run 'rdefaults read \(targetArgument(domain))' to list its keys.", code: .failure)
  }

  /// The system's reason for a failed file operation (`No such file or directory`), where Foundation's own message
  /// would be a bare error code (`The operation could not be completed. (NSCocoaErrorDomain error 512.)`).
  static func systemReason(_ error: any Error) -> String {
    var current = error as NSError
    while true {
      if current.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(current.code))) }
      guard let underlying = current.userInfo[NSUnderlyingErrorKey] as? NSError else { break }
      current = underlying
    }
    if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    // corelibs reports some failures with a Cocoa code only.
    let codes: [CocoaError.Code: Int32] = [
      .fileNoSuchFile: ENOENT, .fileReadNoSuchFile: ENOENT, .fileWriteNoPermission: EACCES,
      .fileReadNoPermission: EACCES, .fileWriteOutOfSpace: ENOSPC, .fileWriteVolumeReadOnly: EROFS,
    ]
    if let cocoa = error as? CocoaError, let code = codes[cocoa.code] { return String(cString: strerror(code)) }
    return error.localizedDescription
  }
}
