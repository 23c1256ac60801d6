import Foundation

/// A run's figures: the printed table, and the JSON (`--json`) that the READMEs' tables are generated from
/// (`scripts/figures`).
struct Report {
  struct Row {
    var name: String
    var value: Double
    /// "≤ 1.3", "≥ 100", "0", "grows" or "-": `scripts/figures` reads it to mark a target as met or not.
    var target: String
    var detail: String
    var decimals: Int
    /// The numbers behind the value (baseline and ours per operation, samples, reads), by name.
    var extras: [String: Double]
  }

  private(set) var rows: [Row] = []

  mutating func add(
    _ name: String, _ value: Double, target: String, detail: String, decimals: Int = 2, extras: [String: Double] = [:]
  ) {
    rows.append(Row(name: name, value: value, target: target, detail: detail, decimals: decimals, extras: extras))
  }

  func table(quick: Bool, seconds: Double) -> String {
    let width = rows.map(\.name.count).max() ?? 20
    var lines = [
      "ReactiveDefaults benchmark\(quick ? " (quick)" : ""), \(ProcessInfo.processInfo.activeProcessorCount) cores",
      "metric".padding(toLength: width, withPad: " ", startingAt: 0)
        + "  value     target  baseline vs ours (per operation)",
    ]
    for row in rows {
      lines.append(
        row.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
          + (row.value.isFinite ? String(format: "%.\(row.decimals)f", row.value) : "n/a")
          .padding(toLength: 8, withPad: " ", startingAt: 0)
          + "  " + row.target.padding(toLength: 6, withPad: " ", startingAt: 0) + "  " + row.detail)
    }
    lines.append(String(format: "(%.0f s)", seconds))
    return lines.joined(separator: "\n")
  }

  /// `fields` (name → value, what CI's smoke test checks), `rows` (each with its target, detail and numbers, in the
  /// printed order) and `run` (when, which commit, which toolchain, how long).
  func json(quick: Bool, seconds: Double) throws -> Data {
    func number(_ value: Double) -> Any { value.isFinite ? value : NSNull() }
    let object: [String: Any] = [
      "run": [
        "quick": quick,
        "cores": ProcessInfo.processInfo.activeProcessorCount,
        "seconds": seconds.rounded(),
        "date": ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate]),
        "commit": Self.commit() ?? "unknown",
        "toolchain": Self.firstLine(of: "swift", ["--version"]) ?? "unknown",
        "system": Self.firstLine(of: "uname", ["-sm"]) ?? "unknown",
      ] as [String: Any],
      "fields": Dictionary(uniqueKeysWithValues: rows.map { ($0.name, number($0.value)) }),
      "rows": rows.map { row -> [String: Any] in
        [
          "name": row.name, "value": number(row.value), "target": row.target, "detail": row.detail,
          "decimals": row.decimals, "extras": row.extras.mapValues(number),
        ]
      },
    ]
    return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
  }

  /// The repository's commit, with "+changes" when what the run builds (the library's and the benchmark's sources and
  /// manifests, new files included) differs from it.
  private static func commit() -> String? {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().path
    guard let head = firstLine(of: "git", ["-C", root, "rev-parse", "--short", "HEAD"]) else { return nil }
    let changed = firstLine(
      of: "git",
      [
        "-C", root, "status", "--porcelain", "--untracked-files=normal", "--", "Sources", "Benchmarks/Sources",
        "Package.swift", "Benchmarks/Package.swift",
      ])
    return head + (changed == nil ? "" : "+changes")
  }

  /// The first line a command prints, or nil if it cannot run, fails or prints nothing.
  private static func firstLine(of command: String, _ arguments: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [command] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
    return line?.isEmpty == false ? line : nil
  }
}
