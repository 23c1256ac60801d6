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

  // MARK: Domains

  /// Opens a domain's store. Its file was checked on opening: an unreadable file fails a command that reads it
  /// (`reading: true`), and is a warning for one that replaces it (the library keeps a backup first).
  static func openStore(_ domain: String, command: String, reading: Bool) throws -> DefaultsStore {
    guard DefaultsStore.isValidSuiteName(domain), let store = DefaultsStore(suiteName: domain) else {
      throw Failure(
        message: "invalid domain name '\(domain)'.",
        hint: "A domain name is not empty and contains no '/' or '..'. "
          + "Usage: \(Help.usageLines[command] ?? "")", code: .usage)
    }
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

  /// The domain's keys and values as saved.
  static func contents(_ store: DefaultsStore) -> [String: PropertyListValue] {
    let domain = store.suiteName.flatMap { store.userDefaults.persistentDomain(forName: $0) } ?? [:]
    return domain.compactMapValues(PropertyListValue.init(foundationObject:))
  }

  /// The domains: the `.plist` files of the platform's preferences folder (`$XDG_CONFIG_HOME` or `~/.config` on
  /// Linux, `~/Library/Preferences` on macOS) whose names are valid suite names.
  static func domainNames(in folder: String = DefaultsStore.preferencesFolder) -> [String] {
    let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return files.filter { $0.hasSuffix(".plist") }.map { String($0.dropLast(".plist".count)) }
      .filter(DefaultsStore.isValidSuiteName).sorted()
  }

  static func missingDomain(_ domain: String) -> Failure {
    Failure(
      message: "domain '\(domain)' does not exist.", hint: "Run 'rdefaults domains' to list the domains.",
      code: .failure)
  }

  static func domains(_ arguments: [String]) throws {
    guard arguments.isEmpty else { throw RDefaults.usage("'domains' takes no arguments.", command: "domains") }
    for name in domainNames() { RDefaults.printOut(name) }
  }

  // MARK: Read

  static func read(_ arguments: [String]) throws {
    switch arguments.count {
    case 0:
      for name in domainNames() {
        let store = try openStore(name, command: "read", reading: true)
        RDefaults.printOut(name + " = " + Formatting.listing(.dictionary(contents(store))))
      }
    case 1:
      let store = try openStore(arguments[0], command: "read", reading: true)
      guard exists(store) else { throw missingDomain(arguments[0]) }
      RDefaults.printOut(Formatting.listing(.dictionary(contents(store))))
    case 2:
      let store = try openStore(arguments[0], command: "read", reading: true)
      guard exists(store) else { throw missingDomain(arguments[0]) }
      guard let value = contents(store)[arguments[1]] else {
        throw Failure(
          message: "key '\(arguments[1])' does not exist in domain '\(arguments[0])'.",
          hint: "Run 'rdefaults read \(arguments[0])' to list its keys.", code: .failure)
      }
      RDefaults.printOut(Formatting.plain(value))
    default:
      throw RDefaults.usage("'read' takes at most a domain and a key.", command: "read")
    }
  }

  // MARK: Write

  static func write(_ arguments: [String]) throws {
    guard arguments.count >= 3 else {
      throw RDefaults.usage("'write' needs a domain, a key and a value.", command: "write")
    }
    let store = try openStore(arguments[0], command: "write", reading: false)
    let key = arguments[1]
    guard !key.isEmpty else { throw RDefaults.usage("the key name is empty.", command: "write") }
    let value = try parseValue(Array(arguments.dropFirst(2)))
    do {
      try store.set(value, for: DefaultsKey<PropertyListValue?>(key))
    } catch {
      throw Failure(message: "\(error)", hint: nil, code: .failure)
    }
    try save(store)
  }

  static func parseValue(_ words: [String]) throws -> PropertyListValue {
    guard let first = words.first else { throw RDefaults.usage("a value is missing.", command: "write") }
    guard first.hasPrefix("-"), first.count > 1, Double(first) == nil else {
      guard words.count == 1 else {
        throw RDefaults.usage("several values need -array or -dict.", command: "write")
      }
      return .string(first)
    }
    let values = Array(words.dropFirst())
    func single() throws -> String {
      guard values.count == 1 else {
        throw RDefaults.usage("\(first) takes exactly one value.", command: "write")
      }
      return values[0]
    }
    func invalid(_ what: String) -> Failure {
      RDefaults.usage("'\(values.first ?? "")' is not \(what).", command: "write")
    }
    switch first {
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
        throw RDefaults.usage("-dict takes pairs of KEY VALUE.", command: "write")
      }
      var entries: [String: PropertyListValue] = [:]
      for index in stride(from: 0, to: values.count, by: 2) { entries[values[index]] = .string(values[index + 1]) }
      return .dictionary(entries)
    default:
      throw RDefaults.usage("unknown type '\(first)'.", command: "write")
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
    guard (1...2).contains(arguments.count) else {
      throw RDefaults.usage("'delete' takes a domain and at most one key.", command: "delete")
    }
    let store = try openStore(arguments[0], command: "delete", reading: false)
    guard exists(store) else { throw missingDomain(arguments[0]) }
    guard arguments.count == 2 else {
      do { return try store.removeSuite() } catch { throw Failure(message: "\(error)", hint: nil, code: .failure) }
    }
    guard contents(store)[arguments[1]] != nil else {
      throw Failure(
        message: "key '\(arguments[1])' does not exist in domain '\(arguments[0])'.", hint: nil, code: .failure)
    }
    store.reset(DefaultsKey<PropertyListValue?>(arguments[1]))
    try save(store)
  }

  // MARK: Export and import

  static func export(_ arguments: [String]) throws {
    guard arguments.count == 2 else { throw RDefaults.usage("'export' needs a domain and a file.", command: "export") }
    let store = try openStore(arguments[0], command: "export", reading: true)
    guard exists(store) else { throw missingDomain(arguments[0]) }
    let domain = store.userDefaults.persistentDomain(forName: arguments[0]) ?? [:]
    let data = try PropertyListSerialization.data(fromPropertyList: domain, format: .xml, options: 0)
    if arguments[1] == "-" {
      FileHandle.standardOutput.write(data)
    } else {
      do { try data.write(to: URL(fileURLWithPath: arguments[1]), options: .atomic) } catch {
        throw Failure(
          message: "cannot write '\(arguments[1])': \(error.localizedDescription)", hint: nil, code: .failure)
      }
    }
  }

  static func `import`(_ arguments: [String]) throws {
    guard arguments.count == 2 else { throw RDefaults.usage("'import' needs a domain and a file.", command: "import") }
    let store = try openStore(arguments[0], command: "import", reading: false)
    let data: Data
    if arguments[1] == "-" {
      data = FileHandle.standardInput.readData(ofLength: DefaultsStore.maximumFileSize + 1)
    } else {
      guard let contents = FileManager.default.contents(atPath: arguments[1]) else {
        throw Failure(message: "cannot read '\(arguments[1])'.", hint: "Check the path.", code: .failure)
      }
      data = contents
    }
    let entries: [String: PropertyListValue]
    do {
      entries = try DefaultsStore.domain(fromPropertyList: data)
    } catch {
      throw Failure(
        message: "'\(arguments[1])' cannot be imported: \(error)",
        hint: "Export a domain with 'rdefaults export DOMAIN FILE' to see the expected form.", code: .failure)
    }
    for (key, value) in entries where !key.isEmpty {
      store[DefaultsKey<PropertyListValue?>(key)] = value
    }
    try save(store)
  }

  // MARK: Watch

  static func watch(_ arguments: [String]) throws -> Never {
    let json = arguments.contains("--json")
    let words = arguments.filter { $0 != "--json" }
    guard let domain = words.first else {
      throw RDefaults.usage("'watch' needs a domain.", command: "watch")
    }
    if let option = words.first(where: { $0.hasPrefix("-") }) {
      throw RDefaults.usage("unknown option '\(option)'.", command: "watch")
    }
    let store = try openStore(domain, command: "watch", reading: true)
    let keys = Array(words.dropFirst())
    let print: @Sendable (String, PropertyListValue?) -> Void = { key, value in
      if json {
        RDefaults.printOut(Formatting.jsonLine(key: key, value: value))
      } else {
        RDefaults.printOut(value.map { "\(key) = \(Formatting.listing($0))" } ?? "\(key) removed")
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
            return Set(old.keys).union(now.keys).sorted().filter { old[$0] != now[$0] }.map { ($0, now[$0]) }
          }
          for (key, value) in changes { print(key, value) }
        })
      else {
        throw Failure(
          message: "cannot watch a whole domain on this platform (its file belongs to the preferences daemon).",
          hint: "Name the keys to watch: rdefaults watch \(domain) KEY…", code: .failure)
      }
      tokens.append(token)
    } else {
      for key in keys {
        tokens.append(store.property(DefaultsKey<PropertyListValue?>(key)).observe(initial: false) { print(key, $0) })
      }
    }
    let sources = [SIGINT, SIGTERM].map { signalNumber in
      signal(signalNumber, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
      source.setEventHandler { exit(0) }
      source.resume()
      return source
    }
    RDefaults.printError(
      "Watching \(domain)\(keys.isEmpty ? "" : " (" + keys.joined(separator: ", ") + ")"); Ctrl-C stops.")
    withExtendedLifetime((tokens, sources)) { dispatchMain() }
  }
}
