// The `export` command.
import Foundation
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Commands {
  static func export(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "export")
    try words.expect(2...2, "'export' needs a domain and a file")
    let (domain, path) = (words.positional[0], words.positional[1])
    guard !path.isEmpty else {
      throw RDefaults.usage("the file name is empty; name a file, or '-' for standard output.", command: "export")
    }
    let progress = WorkProgress(.exported)
    defer { progress.finish() }
    progress.update(.reading)
    // A suite's file as saved, read once under its lock, without opening a store: the open loads the suite into
    // corelibs and builds its merged view, most of an export of 100,000 keys. (A file that cannot be read that way,
    // and a domain with no file, go through the store, which reports them as every command does.)
    let saved =
      targetFile == nil && DefaultsStore.isValidSuiteName(domain)
      ? (try? DefaultsStore.savedEntries(ofSuite: domain)) ?? nil : nil
    let entries: [PropertyListKey: PropertyListValue]
    if let saved {
      entries = saved
    } else {
      let store = try openExisting(domain, command: "export")
      do {
        entries = try store.savedEntries() ?? contents(store)
      } catch {
        throw Failure(message: "\(error)", hint: nil, code: .failure)
      }
    }
    progress.counted(entries.count)
    // The library's encoder, not PropertyListSerialization: corelibs' `persistentDomain(forName:)` would merge keys
    // that differ only by Unicode normalization.
    let data = DefaultsStore.reportingProgress({ phase, done, total in
      progress.update(.library(phase), done: done, of: total)
    }) { DefaultsStore.xmlPropertyList(entries) }
    progress.update(.library(.writing))
    if path == "-" {
      // The line goes before the export does: standard output may be the same terminal.
      progress.finish()
      RDefaults.writeAll(data, to: STDOUT_FILENO)
    } else {
      try writeExport(data, to: path)
    }
    progress.succeeded()
  }

  /// Writes an export: a regular file (or a new one) is replaced atomically; anything else (a symbolic link, a
  /// device, a FIFO) is written through, never replaced, so that `/dev/stdout` works and `/dev/full` stays a device.
  private static func writeExport(_ data: Data, to path: String) throws {
    var info = stat()
    let isRegularFile = lstat(path, &info) != 0 || info.st_mode & S_IFMT == S_IFREG
    if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
      throw Failure(
        message: "cannot write '\(Formatting.escaped(path))': it is a folder.", hint: "Name a file inside it.",
        code: .failure)
    }
    do {
      if isRegularFile {
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        return
      }
      let descriptor = open(path, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0o644)
      guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
      defer { close(descriptor) }
      if let failed = RDefaults.writeBytes(data, to: descriptor) {
        throw POSIXError(POSIXErrorCode(rawValue: failed) ?? .EIO)
      }
    } catch {
      throw Failure(
        message: "cannot write '\(Formatting.escaped(path))': \(systemReason(error))", hint: nil, code: .failure)
    }
  }
}
