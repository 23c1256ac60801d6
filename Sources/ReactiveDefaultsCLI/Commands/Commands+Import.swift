// The `import` command.
import Foundation
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Commands {
  static func `import`(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "import")
    try words.expect(2...2, "'import' needs a domain and a file")
    let (domain, path) = (words.positional[0], words.positional[1])
    let store = try openStore(domain, command: "import", reading: false)
    let progress = WorkProgress(.imported)
    defer { progress.finish() }
    guard !path.isEmpty else {
      throw RDefaults.usage("the file name is empty; name a file, or '-' for standard input.", command: "import")
    }
    let source = path == "-" ? "standard input" : "'\(Formatting.escaped(path))'"
    let data: Data
    do {
      progress.update(.reading)
      data = try readImport(path)
    } catch {
      throw Failure(message: "cannot read \(source): \(systemReason(error)).", hint: "Check the path.", code: .failure)
    }
    let entries: [PropertyListKey: PropertyListValue]
    do {
      progress.update(.parsing)
      entries = try DefaultsStore.domain(fromPropertyList: data)
    } catch {
      let reason: String
      if case .unreadableFile(_, let why, _) = error { reason = why } else { reason = "\(error)" }
      throw Failure(
        message: "\(source) cannot be imported: it \(reason).",
        hint: "An import needs a property list (XML or binary) whose root is a dictionary of keys and values, at most "
          + "\(DefaultsStore.maximumFileSize >> 20) MiB; 'rdefaults export DOMAIN FILE' writes one.", code: .failure)
    }
    if entries.keys.contains("") {
      throw Failure(
        message: "'\(Formatting.escaped(path))' has an entry with an empty key, which a domain cannot hold.",
        hint: "Nothing was imported: remove or rename that entry first.", code: .failure)
    }
    progress.counted(entries.count)
    do {
      try DefaultsStore.reportingProgress({ phase, done, total in
        progress.update(.library(phase), done: done, of: total)
      }) {
        // The tool exits next: corelibs' copy need not be loaded again.
        try store.importEntries(entries, loadingCopy: false)
      }
    } catch {
      throw Failure(
        message: "\(error)", hint: "Nothing was imported. Check the free space and the permissions of the folder.",
        code: .failure)
    }
    progress.succeeded()
  }

  /// The bytes of an import's input: a file, or standard input for `-`; at most one byte more than the largest
  /// importable file (so that a larger one is refused by its size).
  private static func readImport(_ path: String) throws -> Data {
    let limit = DefaultsStore.maximumFileSize + 1
    guard path != "-" else { return try FileHandle.standardInput.read(upToCount: limit) ?? Data() }
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    return try handle.read(upToCount: limit) ?? Data()
  }
}
