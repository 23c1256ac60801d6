import Foundation
import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// How costs grow with the number of keys, for `--chart FILE.svg`: a write, a read right after a write, and a new
/// process opening the file and reading one key, at 100, 1,000 and 10,000 keys, for raw corelibs `UserDefaults`, the
/// classic Rx recipe (every observer re-reads its key at each change), the suite store and the file store; drawn as
/// an SVG by ``render(_:)`` from the run's own figures.
enum Curves {
  static let sizes = [100, 1_000, 10_000]
  static let series = [
    "raw corelibs UserDefaults (no observer)", "classic Rx recipe (reads as raw corelibs)", "suite store", "file store",
  ]

  /// One panel: per series, nanoseconds per operation at each of ``sizes``.
  struct Panel {
    var title: String
    var values: [[Double]]
  }

  /// Measures the three panels. `fanout` and `readAfterWrite` are the run's figures at each size (the recipe's and
  /// the suite store's writes with every key observed; the plain and suite store's read-after-write cycles).
  static func measure(
    _ settings: Settings, fanout: [Comparison], readAfterWrite: [Comparison]
  ) throws -> [Panel] {
    var write = Panel(title: "a write (every key observed)", values: Array(repeating: [], count: 4))
    var cycle = Panel(title: "a read right after a write", values: Array(repeating: [], count: 4))
    var open = Panel(title: "a new process: open, read one key", values: Array(repeating: [], count: 4))
    for (index, keys) in sizes.enumerated() {
      let (raw, file) = writes(keys: keys, settings)
      write.values[0].append(raw)
      write.values[1].append(fanout[index].baselineNanoseconds)
      write.values[2].append(fanout[index].oursNanoseconds)
      write.values[3].append(file)
      cycle.values[0].append(readAfterWrite[index].baselineNanoseconds)
      // The recipe reads through `UserDefaults`: its cycle is raw corelibs'.
      cycle.values[1].append(readAfterWrite[index].baselineNanoseconds)
      cycle.values[2].append(readAfterWrite[index].oursNanoseconds)
      cycle.values[3].append(fileReadAfterWrite(keys: keys, settings))
      let opened = try opens(keys: keys, settings)
      open.values[0].append(opened.plain)
      open.values[1].append(opened.plain)
      open.values[2].append(opened.suite)
      open.values[3].append(opened.file)
    }
    return [write, cycle, open]
  }

  /// A write of one key in a `keys`-key suite with plain `set` (no observers), and in a `keys`-key file store with
  /// every key observed.
  private static func writes(keys: Int, _ settings: Settings) -> (raw: Double, file: Double) {
    let suite = scratchSuite("curve-write")
    let path = scratchFile("curve-write")
    defer {
      cleanUp(suite)
      cleanUpFile(path)
    }
    let plain = UserDefaults(suiteName: suite)!
    let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
    let typed = (0..<keys).map { DefaultsKey<Int>("key\($0)", default: 0) }
    for (index, key) in typed.enumerated() {
      plain.set(index, forKey: key.name)
      store[key] = index
    }
    plain.synchronize()
    store.flush()
    let tokens = typed.map { store.property($0).observe(initial: false) { _ in } }
    defer { tokens.forEach { $0.cancel() } }
    var next = keys
    let (base, mine) = compare(
      rounds: settings.rounds, operations: settings.quick ? 5_000 : 20_000,
      baseline: { _ in
        next &+= 1
        plain.set(next, forKey: "key0")
      },
      ours: { _ in
        next &+= 1
        store[typed[0]] = next
      })
    store.flush()
    return (base, mine)
  }

  /// The file store's write of one key then read of another, in a `keys`-key file.
  private static func fileReadAfterWrite(keys: Int, _ settings: Settings) -> Double {
    let path = scratchFile("curve-cycle")
    defer { cleanUpFile(path) }
    let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
    let typed = (0..<keys).map { DefaultsKey<Int>("k\($0)", default: 0) }
    for (index, key) in typed.enumerated() { store[key] = index }
    store.flush()
    let sink = Sink.shared
    var next = 0
    let (_, mine) = compare(
      rounds: settings.rounds, operations: settings.quick ? 5_000 : 20_000,
      baseline: { _ in },
      ours: { index in
        next &+= 1
        store[typed[0]] = next
        sink.take(store[typed[1 + index % (keys - 1)]])
      })
    store.flush()
    return mine
  }

  /// A new process opening a `keys`-key suite (plain and through the store) or file store, reading one key: whole
  /// processes, alternated, medians.
  private static func opens(keys: Int, _ settings: Settings) throws -> (plain: Double, suite: Double, file: Double) {
    let suite = Growth.prepareSuite(keys: keys)
    let path = scratchFile("curve-open")
    defer {
      cleanUp(suite)
      cleanUpFile(path)
    }
    let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
    for index in 0..<keys { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
    try store.save()
    var times: [String: [Double]] = [:]
    let ways = [("plain", suite), ("ours", suite), ("file", path)]
    for (way, target) in ways { _ = try Growth.timeColdOpen(way, target: target) }
    for round in 0..<(settings.quick ? 5 : 11) {
      for (way, target) in round.isMultiple(of: 2) ? ways : ways.reversed() {
        times[way, default: []].append(try Growth.timeColdOpen(way, target: target))
      }
    }
    return (median(times["plain"]!), median(times["ours"]!), median(times["file"]!))
  }

  /// The panels as an SVG: one log–log chart per panel, side by side, with a shared legend.
  static func render(_ panels: [Panel]) -> String {
    let colors = ["#7f7f7f", "#d62728", "#1f77b4", "#2ca02c"]
    let width = 300.0
    let height = 240.0
    let margin = (left: 62.0, right: 26.0, top: 34.0, bottom: 40.0)
    var svg = """
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width) * panels.count)" height="\(Int(height) + 48)" \
      font-family="sans-serif" font-size="11">
      <rect width="100%" height="100%" fill="white"/>

      """
    func escaped(_ text: String) -> String {
      text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
    func label(_ nanoseconds: Double) -> String {
      switch nanoseconds {
      case ..<1_000: String(format: "%.0f ns", nanoseconds)
      case ..<1_000_000: String(format: "%.0f µs", nanoseconds / 1_000)
      default: String(format: "%.0f ms", nanoseconds / 1_000_000)
      }
    }
    for (index, panel) in panels.enumerated() {
      let x0 = Double(index) * width
      let all = panel.values.flatMap { $0 }.filter { $0 > 0 }
      let low = floor(log10(all.min() ?? 1))
      let high = max(low + 1, ceil(log10(all.max() ?? 10)))
      let plotWidth = width - margin.left - margin.right
      let plotHeight = height - margin.top - margin.bottom
      func x(_ keys: Int) -> Double {
        x0 + margin.left + (log10(Double(keys)) - 2) / 2 * plotWidth
      }
      func y(_ nanoseconds: Double) -> Double {
        margin.top + (1 - (log10(max(nanoseconds, 1)) - low) / (high - low)) * plotHeight
      }
      svg +=
        "<text x=\"\(x0 + width / 2)\" y=\"18\" text-anchor=\"middle\" font-weight=\"bold\">"
        + "\(escaped(panel.title))</text>\n"
      svg +=
        "<rect x=\"\(x0 + margin.left)\" y=\"\(margin.top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" "
        + "fill=\"none\" stroke=\"#ccc\"/>\n"
      for decade in stride(from: low, through: high, by: 1) {
        let level = y(pow(10, decade))
        svg +=
          "<line x1=\"\(x0 + margin.left)\" x2=\"\(x0 + width - margin.right)\" y1=\"\(level)\" y2=\"\(level)\" "
          + "stroke=\"#eee\"/>\n"
        svg +=
          "<text x=\"\(x0 + margin.left - 4)\" y=\"\(level + 4)\" text-anchor=\"end\">"
          + "\(label(pow(10, decade)))</text>\n"
      }
      for keys in sizes {
        svg +=
          "<text x=\"\(x(keys))\" y=\"\(height - margin.bottom + 14)\" text-anchor=\"middle\">"
          + "\(keys.formatted())</text>\n"
      }
      svg +=
        "<text x=\"\(x0 + margin.left + plotWidth / 2)\" y=\"\(height - 8)\" text-anchor=\"middle\">"
        + "keys in the file</text>\n"
      for (series, values) in panel.values.enumerated() where values.count == sizes.count {
        let points = zip(sizes, values).map { "\(x($0)),\(y($1))" }.joined(separator: " ")
        // The recipe dashed: where it reads as raw corelibs, both lines show.
        let dash = series == 1 ? " stroke-dasharray=\"6 4\"" : ""
        svg += "<polyline points=\"\(points)\" fill=\"none\" stroke=\"\(colors[series])\" stroke-width=\"2\"\(dash)/>\n"
        for (keys, value) in zip(sizes, values) {
          svg +=
            "<circle cx=\"\(x(keys))\" cy=\"\(y(value))\" r=\"3\" fill=\"\(colors[series])\">"
            + "<title>\(escaped(Self.series[series])), \(keys) keys: \(label(value))</title></circle>\n"
        }
      }
    }
    for (series, name) in Self.series.enumerated() {
      let x = 20.0 + Double(series % 2) * 450
      let row = height + 10 + Double(series / 2) * 16
      svg += "<rect x=\"\(x)\" y=\"\(row)\" width=\"14\" height=\"4\" fill=\"\(colors[series])\"/>\n"
      svg += "<text x=\"\(x + 20)\" y=\"\(row + 6)\">\(escaped(name))</text>\n"
    }
    return svg + "</svg>\n"
  }
}
