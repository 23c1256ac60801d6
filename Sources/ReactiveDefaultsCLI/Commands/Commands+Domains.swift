// The domains: discovery in the preferences folder, and the `domains` command.
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Commands {
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

  static func domains(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "domains")
    try words.expect(0...0, "'domains' takes no arguments")
    for name in domainNames() { RDefaults.printOut(name) }
    reportUnusableFiles()
  }
}
