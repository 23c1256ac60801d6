import Dispatch
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

  /// The domains: the `.plist` files of the platform's preferences folder (`$XDG_CONFIG_HOME` or `~/.config` on
  /// Linux, `~/Library/Preferences` on macOS) whose names are valid domain names.
  static func domainNames(in folder: String = DefaultsStore.preferencesFolder) -> [String] {
    plistFiles(in: folder).compactMap(\.domain).sorted()
  }

  /// A `.plist` file of the preferences folder: its name as bytes, and the domain it holds when its name is valid
  /// UTF-8 and a valid domain name.
  struct PlistFile {
    var name: [UInt8]
    var domain: String? {
      guard let text = String(validating: name.dropLast(6), as: UTF8.self), DefaultsStore.isValidSuiteName(text)
      else { return nil }
      return text
    }
  }

  /// The `.plist` files of a folder, read with `readdir`: Foundation's listing repairs names that are not UTF-8, so
  /// `raw\xff.plist` and `raw\xfe.plist` would both look like `raw\u{FFFD}`.
  static func plistFiles(in folder: String) -> [PlistFile] {
    guard let directory = opendir(folder) else { return [] }
    defer { closedir(directory) }
    var files: [PlistFile] = []
    let suffix = Array(".plist".utf8)
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
      if name.count > suffix.count, name.suffix(suffix.count).elementsEqual(suffix) {
        files.append(PlistFile(name: name))
      }
    }
    return files
  }

  /// Tells, on standard error, of the `.plist` files that cannot be domains, escaped, with how to reach them.
  static func reportUnusableFiles(in folder: String = DefaultsStore.preferencesFolder) {
    let unusable = plistFiles(in: folder).filter { $0.domain == nil }.map { Formatting.escaped(bytes: $0.name) }
      .sorted()
    guard !unusable.isEmpty else { return }
    RDefaults.printError(
      "Note: \(unusable.count == 1 ? "this file's name is" : "these files' names are") not a valid domain name: "
        + unusable.joined(separator: ", ") + ". Rename one to use it, such as: mv $'\(unusable[0])' "
        + "\(folder)/NEW.plist (in the folder \(folder)).")
  }

  static func missingDomain(_ domain: String) -> Failure {
    Failure(
      message: "\(target(domain)) does not exist.",
      hint: targetIsFile
        ? "A file is made by its first write: rdefaults write --file PATH KEY VALUE."
        : "Run 'rdefaults domains' to list the domains.",
      code: .failure)
  }

  static func domains(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "domains")
    try words.expect(0...0, "'domains' takes no arguments")
    for name in domainNames() { RDefaults.printOut(name) }
    reportUnusableFiles()
  }

  // MARK: Read

  static func read(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "read")
    try words.expect(0...2, "'read' takes at most a domain and a key")
    let positional = words.positional
    guard let domain = positional.first else {
      for name in domainNames() {
        let store = try openStore(name, command: "read", reading: true)
        RDefaults.printOut(name + " = " + Formatting.listing(.dictionary(contents(store))))
      }
      return
    }
    let store = try openExisting(domain, command: "read")
    guard positional.count == 2 else { return RDefaults.printOut(Formatting.listing(.dictionary(contents(store)))) }
    RDefaults.printOut(Formatting.plain(try value(of: positional[1], in: store, domain: domain)))
  }

  static func readType(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "read-type")
    try words.expect(2...2, "'read-type' needs a domain and a key")
    let store = try openExisting(words.positional[0], command: "read-type")
    let value = try value(of: words.positional[1], in: store, domain: words.positional[0])
    RDefaults.printOut("Type is \(Formatting.typeName(value))")
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

  // MARK: Find

  static func find(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "find")
    try words.expect(1...1, "'find' needs one word")
    let word = words.positional[0]
    guard !word.isEmpty else { throw RDefaults.usage("the word to find is empty.", command: "find") }
    var found = false
    for name in domainNames() {
      guard let store = try? openStore(name, command: "find", reading: true) else { continue }
      let entries = contents(store)
      let matching =
        name.localizedCaseInsensitiveContains(word)
        ? entries
        : entries.filter {
          $0.key.string.localizedCaseInsensitiveContains(word) || Formatting.contains(word, in: $0.value)
        }
      guard !matching.isEmpty else { continue }
      found = true
      RDefaults.printOut(
        "Found \(matching.count) key\(matching.count == 1 ? "" : "s") in domain '\(name)': "
          + Formatting.listing(.dictionary(matching)))
    }
    if !found { RDefaults.printError("No domain, key or value contains '\(Formatting.escaped(word))'.") }
  }

  // MARK: Write

  static func write(_ arguments: [String]) throws {
    // DOMAIN KEY [TYPE] VALUE...: a type is recognised right after KEY only; every word after it is a value, and
    // '--' makes what follows literal (a key or a value that starts with '-').
    var words = arguments[...]
    var literal = false
    func next(_ what: String) throws -> String? {
      guard var word = words.popFirst() else { return nil }
      if !literal && word == "--" {
        literal = true
        guard let after = words.popFirst() else { return nil }
        word = after
      }
      if !literal && Words.looksLikeOption(word) {
        throw RDefaults.usage(
          "'\(Formatting.escaped(word))' is not a \(what); put '--' before a \(what) that starts with '-'.",
          command: "write")
      }
      return word
    }
    guard let domain = try next("domain"), let key = try next("key") else {
      throw RDefaults.usage("'write' needs a domain, a key and a value.", command: "write")
    }
    guard !key.isEmpty else { throw RDefaults.usage("the key name is empty.", command: "write") }
    var type: String?
    if !literal, let first = words.first {
      if first == "--" {
        literal = true
        words.removeFirst()
      } else if Words.looksLikeOption(first) {
        guard Help.allTypeFlags.contains(first) else {
          throw RDefaults.usage(
            "unknown type '\(Formatting.escaped(first))'; put '--' before a value that starts with '-'.",
            command: "write")
        }
        type = first
        words.removeFirst()
        if words.first == "--" { words.removeFirst() }
      }
    }
    let value = try parseValue(type: type, Array(words))
    let store = try openStore(domain, command: "write", reading: false)
    do {
      try store.set(value, for: DefaultsKey<PropertyListValue?>(key))
    } catch {
      throw Failure(message: "\(error)", hint: nil, code: .failure)
    }
    try save(store)
  }

  static func parseValue(type: String?, _ values: [String]) throws -> PropertyListValue {
    guard let type else {
      guard let value = values.first else { throw RDefaults.usage("a value is missing.", command: "write") }
      guard values.count == 1 else {
        throw RDefaults.usage(
          "several values ('\(Formatting.escaped(values[1]))' is the second) need -array or -dict.", command: "write")
      }
      return .string(value)
    }
    func single() throws -> String {
      guard values.count == 1 else {
        throw RDefaults.usage(
          values.count > 1
            ? "\(type) takes one value; '\(Formatting.escaped(values[1]))' is a second."
            : "\(type) needs a value.", command: "write")
      }
      return values[0]
    }
    func invalid(_ what: String) -> Failure {
      RDefaults.usage("'\(Formatting.escaped(values.first ?? ""))' is not \(what).", command: "write")
    }
    switch type {
    case "-string": return .string(try single())
    case "-int", "-integer":
      guard let number = Int64(try single()) else { throw invalid("an integer") }
      return .integer(Int128(number))
    case "-float", "-double", "-real":
      guard let number = Double(try single()) else { throw invalid("a number") }
      return .real(number)
    case "-bool", "-boolean":
      guard let flag = Bool(propertyListValue: .string(try single())) ?? ["1": true, "0": false][values[0]] else {
        throw invalid("YES, NO, true, false, 1 or 0")
      }
      return .bool(flag)
    case "-date":
      let text = try single()
      guard let date = ISO8601DateFormatter().date(from: text) else { throw invalid("an ISO 8601 date") }
      return .date(date)
    case "-data":
      let hex = try single()
      guard hex.count.isMultiple(of: 2), let bytes = hexBytes(hex) else { throw invalid("hex digits") }
      return .data(Data(bytes))
    case "-url":
      let text = try single()
      let url = text.hasPrefix("/") ? URL(fileURLWithPath: text) : URL(string: text)
      guard let url, url.scheme != nil, let archive = try? url.propertyListValue() else {
        throw invalid("an absolute URL or path")
      }
      return archive
    case "-array":
      return .array(values.map { .string($0) })
    case "-dict":
      guard values.count.isMultiple(of: 2) else {
        throw RDefaults.usage(
          "-dict takes pairs of KEY VALUE; '\(Formatting.escaped(values.last ?? ""))' has no value.", command: "write")
      }
      var entries: [PropertyListKey: PropertyListValue] = [:]
      for index in stride(from: 0, to: values.count, by: 2) {
        entries[PropertyListKey(values[index])] = .string(values[index + 1])
      }
      return .dictionary(entries)
    default:
      throw RDefaults.usage("unknown type '\(type)'.", command: "write")
    }
  }

  private static func hexBytes(_ hex: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
      let next = hex.index(index, offsetBy: 2)
      guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
      bytes.append(byte)
      index = next
    }
    return bytes
  }

  // MARK: Delete

  static func delete(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "delete")
    try words.expect(1...2, "'delete' takes a domain and at most one key")
    let domain = words.positional[0]
    let store = try openStore(domain, command: "delete", reading: false)
    guard exists(store) else { throw missingDomain(domain) }
    guard words.positional.count == 2 else {
      do { return try store.removeSuite() } catch { throw Failure(message: "\(error)", hint: nil, code: .failure) }
    }
    _ = try value(of: words.positional[1], in: store, domain: domain)
    store.reset(DefaultsKey<PropertyListValue?>(words.positional[1]))
    try save(store)
  }

  // MARK: Rename

  static func rename(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "rename")
    try words.expect(3...3, "'rename' needs a domain, the old key and the new key")
    let (domain, old, new) = (words.positional[0], words.positional[1], words.positional[2])
    guard !new.isEmpty else { throw RDefaults.usage("the new key name is empty.", command: "rename") }
    let store = try openExisting(domain, command: "rename")
    // By exact characters: one spelling of a name renamed to another (NFD to NFC) is a rename.
    guard PropertyListKey(old) != PropertyListKey(new) else {
      // Nothing to move, but the key must exist.
      _ = try value(of: old, in: store, domain: domain)
      return
    }
    do {
      try store.edit { tx in
        let oldKey = DefaultsKey<PropertyListValue?>(old)
        guard let value = tx[oldKey] else { throw missingKey(old, domain: domain) }
        tx[DefaultsKey<PropertyListValue?>(new)] = value
        tx[oldKey] = nil
      }
    } catch let failure as Failure {
      throw failure
    } catch {
      throw Failure(message: "\(error)", hint: nil, code: .failure)
    }
  }

  private static func missingKey(_ key: String, domain: String) -> Failure {
    guard !key.isEmpty else {
      return Failure(
        message: "the key name is empty.", hint: "Run 'rdefaults read \(targetArgument(domain))' to list its keys.",
        code: .usage)
    }
    return Failure(
      message: "key '\(Formatting.escaped(key))' does not exist in \(target(domain)).",
      hint: "Run 'rdefaults read \(targetArgument(domain))' to list its keys.", code: .failure)
  }

  // MARK: Export and import

  static func export(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "export")
    try words.expect(2...2, "'export' needs a domain and a file")
    let (domain, path) = (words.positional[0], words.positional[1])
    guard !path.isEmpty else {
      throw RDefaults.usage("the file name is empty; name a file, or '-' for standard output.", command: "export")
    }
    let store = try openExisting(domain, command: "export")
    // The library's encoder, not PropertyListSerialization: corelibs' `persistentDomain(forName:)` would merge keys
    // that differ only by Unicode normalization.
    let data = DefaultsStore.xmlPropertyList(contents(store))
    if path == "-" {
      RDefaults.writeAll(data, to: STDOUT_FILENO)
    } else {
      try writeExport(data, to: path)
    }
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

  static func `import`(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "import")
    try words.expect(2...2, "'import' needs a domain and a file")
    let (domain, path) = (words.positional[0], words.positional[1])
    let store = try openStore(domain, command: "import", reading: false)
    let progress = ImportProgress()
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
        try store.importEntries(entries)
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

  // MARK: Watch

  static func watch(_ arguments: [String]) throws -> Never {
    let words = try Words(arguments, command: "watch", options: ["--json"])
    let json = words.options.contains("--json")
    guard let domain = words.positional.first else {
      throw RDefaults.usage("'watch' needs a domain.", command: "watch")
    }
    let store = try openStore(domain, command: "watch", reading: true)
    let keys = Array(words.positional.dropFirst())
    let print: @Sendable (String, PropertyListValue?) -> Void = { key, value in
      if json {
        RDefaults.printOut(Formatting.jsonLine(key: key, value: value))
      } else {
        let name = Formatting.listing(.string(key))
        RDefaults.printOut(value.map { "\(name) = \(Formatting.inline($0))" } ?? "\(name) removed")
      }
    }
    var tokens: [DefaultsObservation] = []
    if keys.isEmpty {
      let snapshot = Mutex(contents(store))
      guard
        let token = store.watchSuiteFile({
          let now = contents(store)
          let changes = snapshot.withLock { old -> [(String, PropertyListValue?)] in
            defer { old = now }
            return Set(old.keys).union(now.keys).sorted().filter { key in
              switch (old[key], now[key]) {
              case (nil, nil): false
              case (let before?, let after?): !before.isSameSetting(as: after)
              default: true
              }
            }.map { ($0.string, now[$0]) }
          }
          for (key, value) in changes { print(key, value) }
        })
      else {
        throw Failure(
          message: "cannot watch a whole domain on this platform (its file belongs to the preferences daemon).",
          hint: "Name the keys to watch: rdefaults watch \(targetArgument(domain)) KEY…", code: .failure)
      }
      tokens.append(token)
    } else {
      for key in keys {
        tokens.append(store.property(DefaultsKey<PropertyListValue?>(key)).observe(initial: false) { print(key, $0) })
      }
    }
    // Installed before anything is printed, synchronously: a Dispatch signal source registers on a background
    // thread, so a Ctrl-C (or SIGTERM) right after the "Watching" line could be ignored and lost. `watch` writes
    // nothing, so ending at once (`_exit`, safe in a signal handler) loses nothing.
    for signalNumber in [SIGINT, SIGTERM] { signal(signalNumber) { _ in _exit(0) } }
    RDefaults.printError(
      "Watching \(targetName(domain))"
        + (keys.isEmpty ? "" : " (" + keys.map { Formatting.listing(.string($0)) }.joined(separator: ", ") + ")")
        + "; Ctrl-C stops.")
    withExtendedLifetime(tokens) { dispatchMain() }
  }
}

/// The words of a command line after the command's name: the options the command knows and its positional
/// arguments. `--` ends the options; a word that looks like an option and is not one is a usage error naming it.
struct Words {
  var positional: [String] = []
  var options: Set<String> = []
  let command: String

  init(_ arguments: [String], command: String, options known: Set<String> = []) throws {
    self.command = command
    var literal = false
    for word in arguments {
      if literal {
        positional.append(word)
      } else if word == "--" {
        literal = true
      } else if Self.looksLikeOption(word) {
        guard known.contains(word) else {
          throw RDefaults.usage(
            "unknown option '\(Formatting.escaped(word))'; put '--' before an argument that starts with '-'.",
            command: command)
        }
        options.insert(word)
      } else {
        positional.append(word)
      }
    }
  }

  /// A word that starts with `-` and is not a negative number.
  static func looksLikeOption(_ word: String) -> Bool {
    word.count > 1 && word.hasPrefix("-") && Double(word) == nil
  }

  /// Fails with a usage error naming the first extra argument, or saying what is missing.
  func expect(_ counts: ClosedRange<Int>, _ what: String) throws {
    if positional.count > counts.upperBound {
      throw RDefaults.usage(
        "\(what): unexpected \(Formatting.argument(positional[counts.upperBound])).", command: command)
    }
    if positional.count < counts.lowerBound { throw RDefaults.usage("\(what).", command: command) }
  }
}

/// A progress line on standard error for an import that takes more than a second, when standard error is a
/// terminal: one line, updated in place twice a second, with the phase, the share done, the keys per second and the
/// time left for the phases that count keys (merging, encoding), and the time spent so far for those that cannot
/// (reading, parsing, sorting, writing, loading). Nothing of it when standard error is not a terminal.
/// `RDEFAULTS_PROGRESS_AFTER` (seconds, default 1) sets when the line first shows.
final class ImportProgress: Sendable {
  /// What the import is doing.
  enum Phase: Sendable, Equatable {
    case reading
    case parsing
    case library(DefaultsStore.WorkPhase)

    var title: String {
      switch self {
      case .reading: "Reading the file"
      case .parsing: "Parsing the file"
      case .library(.merging): "Merging the keys"
      case .library(.sorting): "Sorting the keys"
      case .library(.encoding): "Writing the keys as XML"
      case .library(.writing): "Writing the file"
      case .library(.loading): "Loading the new file"
      }
    }
  }

  private struct State {
    var phase = Phase.reading
    var done = 0
    var total = 0
    var phaseStart = DispatchTime.now()
    var keys: Int?
    var succeeded = false
    var shown = false
  }

  private let state = Mutex(State())
  private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

  init() {
    guard isatty(STDERR_FILENO) == 1 else { return }
    let after = ProcessInfo.processInfo.environment["RDEFAULTS_PROGRESS_AFTER"].flatMap(Double.init) ?? 1
    timer.withLock { timer in
      let source = DispatchSource.makeTimerSource(queue: .global())
      source.schedule(deadline: .now() + max(0, after), repeating: 0.5)
      source.setEventHandler { [weak self] in self?.show() }
      source.resume()
      timer = source
    }
  }

  /// The import is now in `phase`, `done` of `total` units into it (0 in all: it cannot count).
  func update(_ phase: Phase, done: Int = 0, of total: Int = 0) {
    state.withLock { state in
      if state.phase != phase {
        state.phase = phase
        state.phaseStart = .now()
      }
      (state.done, state.total) = (done, total)
    }
  }

  /// The number of keys imported, once known.
  func counted(_ keys: Int) {
    state.withLock { $0.keys = keys }
  }

  /// The import succeeded.
  func succeeded() {
    state.withLock { $0.succeeded = true }
  }

  private func show() {
    let line = state.withLock { state -> String in
      state.shown = true
      let seconds = Double(DispatchTime.now().uptimeNanoseconds - state.phaseStart.uptimeNanoseconds) / 1e9
      return Self.line(state.phase, done: state.done, of: state.total, seconds: seconds)
    }
    RDefaults.writeAll(Data(("\r\u{1B}[K" + line).utf8), to: STDERR_FILENO)
  }

  /// The progress line of a phase `seconds` into it: the share done, the rate and the time left when it counts
  /// units and has done some, else the time so far.
  static func line(_ phase: Phase, done: Int, of total: Int, seconds: Double) -> String {
    guard total > 0, done > 0, seconds > 0 else { return "\(phase.title)… \(Int(seconds)) s" }
    let rate = Double(done) / seconds
    let left = Double(total - done) / max(rate, 1)
    return "\(phase.title): \(done) of \(total) keys (\(done * 100 / total)%), \(Int(rate)) keys/s, "
      + "\(Int(left.rounded(.up))) s left"
  }

  /// Stops the line, ending it with the outcome if it was shown.
  func finish() {
    timer.withLock { $0 }?.cancel()
    let state = state.withLock { $0 }
    guard state.shown else { return }
    let last = state.succeeded ? "Imported \(state.keys ?? 0) keys.\n" : ""
    RDefaults.writeAll(Data(("\r\u{1B}[K" + last).utf8), to: STDERR_FILENO)
  }
}
