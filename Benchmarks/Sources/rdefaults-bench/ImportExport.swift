import Foundation
@_spi(Tools) import ReactiveDefaults

/// The `rdefaults` tool's `import` and `export` of 100,000 keys against what a user would script instead: Python's
/// `plistlib.load` and `plistlib.dump` of the same file. Whole processes, alternated, medians.
enum ImportExport {
  static let keys = 100_000

  /// `import` ÷ Python and `export` ÷ Python; nil when `python3` cannot be found (the fields are then n/a).
  static func measure(_ settings: Settings) throws -> (import: Comparison, export: Comparison)? {
    guard let pythonPath = python3() else { return nil }
    let tool = try rdefaultsPath()
    let folder = scratchFolder() + "/import-export-\(ProcessInfo.processInfo.processIdentifier)"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let source = folder + "/source.plist"
    var entries: [PropertyListKey: PropertyListValue] = [:]
    for index in 0..<keys { entries[PropertyListKey("key\(index)")] = .integer(Int128(index)) }
    try DefaultsStore.xmlPropertyList(entries).write(to: URL(fileURLWithPath: source))
    let script =
      "import plistlib, sys\nwith open(sys.argv[1], 'rb') as f: d = plistlib.load(f)\n"
      + "with open(sys.argv[2], 'wb') as f: plistlib.dump(d, f)\n"

    var domains: [String] = []
    defer { domains.forEach(removeUnloadedSuite) }
    func python() throws -> Double {
      try timeProcess([pythonPath, "-c", script, source, folder + "/python.plist"], what: "python3")
    }
    /// An import into a new domain each time (the tool's main case: a domain restored or copied elsewhere).
    func importing() throws -> Double {
      let domain = scratchSuite("import")
      domains.append(domain)
      return try timeProcess([tool, "import", domain, source], what: "rdefaults import")
    }
    func exporting() throws -> Double {
      try timeProcess([tool, "export", domains[0], folder + "/export.plist"], what: "rdefaults export")
    }
    _ = try python()
    _ = try importing()
    var times: (python: [Double], import: [Double], export: [Double]) = ([], [], [])
    for round in 0..<(settings.quick ? 3 : 5) {
      if round.isMultiple(of: 2) {
        times.python.append(try python())
        times.import.append(try importing())
        times.export.append(try exporting())
      } else {
        times.export.append(try exporting())
        times.import.append(try importing())
        times.python.append(try python())
      }
    }
    let base = median(times.python)
    return (
      Comparison(baselineNanoseconds: base, oursNanoseconds: median(times.import), ratio: median(times.import) / base),
      Comparison(baselineNanoseconds: base, oursNanoseconds: median(times.export), ratio: median(times.export) / base)
    )
  }

  /// `python3` on the `PATH`, if any.
  static func python3() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  /// The `rdefaults` built beside this benchmark (the package's `rdefaults` product, a dependency of the benchmark).
  static func rdefaultsPath() throws -> String {
    let path = URL(fileURLWithPath: try executablePath()).deletingLastPathComponent().appendingPathComponent(
      "rdefaults")
    guard FileManager.default.isExecutableFile(atPath: path.path) else {
      throw BenchmarkError("rdefaults is not built beside the benchmark: \(path.path)")
    }
    return path.path
  }
}

/// Removes a suite this process never loaded: its files only. (corelibs' `removePersistentDomain(forName:)` loads the
/// domain, then removes its keys one at a time, each a scan of the list of changed keys: hours for 100,000 keys.)
private func removeUnloadedSuite(_ suite: String) {
  #if os(Linux)
    for suffix in ["", ".lock"] {
      try? FileManager.default.removeItem(atPath: preferencesFolder() + "/\(suite).plist" + suffix)
    }
  #else
    cleanUp(suite)
  #endif
}
