// rdefaults-bench: ReactiveDefaults against what users would otherwise write, measured in one run, as ratios.
//   swift run -c release --package-path Benchmarks rdefaults-bench [--quick] [--json FILE] [--chart FILE.svg]
import Foundation

var settings = Settings()
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child", arguments.count == 2 { CrossProcess.runChild(suite: arguments[1]) }
if arguments.first == "--file-child", arguments.count == 2 { CrossProcess.runChild(suite: arguments[1], file: true) }
if arguments.first == "--cold-open", arguments.count == 3 { Growth.runColdOpenChild(arguments[1], suite: arguments[2]) }
if arguments.first == "--torn-reader", arguments.count == 2 { TornReads.runReader(path: arguments[1]) }
let usage = "Usage: rdefaults-bench [--quick] [--json FILE] [--chart FILE.svg] [--only METRIC,METRIC…]"
/// What an option names (the next argument: a file, or `--only`'s metrics), taken off the arguments; a usage error
/// without one.
@MainActor func file(after option: String) -> String {
  guard !arguments.isEmpty else {
    FileHandle.standardError.write(Data("Error: \(option) needs a value.\n".utf8))
    exit(64)
  }
  return arguments.removeFirst()
}

while let argument = arguments.first {
  arguments.removeFirst()
  switch argument {
  case "--quick": settings.quick = true
  case "--chart": settings.chartPath = file(after: argument)
  case "--json": settings.jsonPath = file(after: argument)
  case "--only": settings.only = Set(file(after: argument).split(separator: ",").map(String.init))
  case "-h", "--help":
    print(usage)
    exit(0)
  default:
    FileHandle.standardError.write(
      Data(
        "Error: unknown argument '\(argument)'.\n\(usage)\n".utf8))
    exit(64)
  }
}

#if DEBUG
  FileHandle.standardError.write(Data("Warning: a debug build; run with -c release for real figures.\n".utf8))
#endif

try run(settings)

func run(_ settings: Settings) throws {
  let started = Date()
  var report = Report()
  /// Measures `comparison` and adds its row, unless `--only` leaves `name` out.
  func row(_ name: String, _ comparison: @autoclosure () throws -> Comparison, target: String) rethrows {
    guard settings.wants(name) else { return }
    let comparison = try comparison()
    report.add(
      name, comparison.ratio, target: target,
      detail: String(format: "%.0f ns vs %.0f ns", comparison.baselineNanoseconds, comparison.oursNanoseconds),
      extras: ["baseline_ns": comparison.baselineNanoseconds, "ours_ns": comparison.oursNanoseconds])
  }
  /// The p50 and p99 rows of a cross-process latency (`prefix` + `_p50_ms`, `_p99_ms`).
  func latencyRows(_ prefix: String, p50 target50: String, p99 target99: String, _ measure: () throws -> [Double])
    rethrows
  {
    guard settings.wants(prefix + "_p50_ms", prefix + "_p99_ms") else { return }
    let latencies = try measure()
    report.add(
      prefix + "_p50_ms", percentile(latencies, 0.5), target: target50, detail: "\(latencies.count) samples",
      extras: ["samples": Double(latencies.count)])
    report.add(
      prefix + "_p99_ms", percentile(latencies, 0.99), target: target99,
      detail: "max \(String(format: "%.2f", latencies.max() ?? 0)) ms", extras: ["max_ms": latencies.max() ?? .nan])
  }
  let samples = settings.quick ? 200 : 300

  let readNames = [
    "read_overhead_int", "read_overhead_string", "read_overhead_url", "read_overhead_codable", "read_codable_vs_int",
  ]
  if settings.only.map({ !$0.isDisjoint(with: readNames) }) ?? true {
    let reads = Scenarios.reads(settings)
    row("read_overhead_int", reads["read_overhead_int"]!, target: "≤ 1.3")
    row("read_overhead_string", reads["read_overhead_string"]!, target: "≤ 1.3")
    row("read_overhead_url", reads["read_overhead_url"]!, target: "-")
    row("read_overhead_codable", reads["read_overhead_codable"]!, target: "-")
    row("read_codable_vs_int", reads["read_codable_vs_int"]!, target: "≤ 1.5")
  }
  row("write_overhead_int", Scenarios.write(settings), target: "≤ 1.5")
  row("size_budget_write_overhead", Scenarios.sizeBudget(settings), target: "≤ 1.2")
  row("multikey_overhead_5", Scenarios.multiKey(settings), target: "≤ 1.5")
  row("edit_vs_flush", Scenarios.editVersusFlush(settings), target: "≤ 1.5")
  row("write_growth_10000", Growth.writeGrowth(settings), target: "≤ 1.5")
  try row("cold_open_overhead_10000", try Growth.coldOpen(settings), target: "≤ 1.2")
  var readAfterWrite: [(Int, Comparison)] = []
  if settings.wants("rw_cycle_speedup_1000", "rw_cycle_growth_10000") || settings.chartPath != nil {
    readAfterWrite = [100, 1_000, 10_000].map { ($0, Scenarios.readAfterWrite(keys: $0, settings)) }
    row("rw_cycle_speedup_1000", readAfterWrite[1].1, target: "≥ 100")
    let growth = Comparison(
      baselineNanoseconds: readAfterWrite[0].1.oursNanoseconds, oursNanoseconds: readAfterWrite[2].1.oursNanoseconds,
      ratio: readAfterWrite[2].1.oursNanoseconds / readAfterWrite[0].1.oursNanoseconds)
    row("rw_cycle_growth_10000", growth, target: "≤ 2")
  }
  var fanouts: [Comparison] = []
  if settings.wants("fanout_speedup_100", "fanout_speedup_1000", "fanout_speedup_10000") || settings.chartPath != nil {
    for keys in [100, 1_000, 10_000] {
      let fanout = Scenarios.fanout(keys: keys, settings)
      fanouts.append(fanout)
      row("fanout_speedup_\(keys)", fanout, target: keys == 1_000 ? "≥ 100" : "grows")
    }
  }
  row("main_actor_delivery_overhead", MainActorDelivery.measure(settings), target: "≤ 3")
  try latencyRows("cross_process", p50: "≤ 1", p99: "≤ 3") { try CrossProcess.measure(samples: samples) }
  try latencyRows("cross_process_unobserved", p50: "≤ 1", p99: "≤ 3") {
    try CrossProcess.measure(samples: samples, observed: false)
  }
  if settings.wants("bytes_per_observer") {
    let memory = Scenarios.bytesPerObserver(settings)
    report.add(
      "bytes_per_observer", memory.bytes, target: "≤ 512", detail: "\(memory.observers) observers", decimals: 0,
      extras: ["observers": Double(memory.observers)])
  }
  // A floor, decided with corelibs in the path (its ceiling there is about 10×): see Benchmarks/README.md.
  row("bulk_new_keys_speedup_8000", Scenarios.bulkNewKeys(settings), target: "≥ 4.5")
  // On Apple platforms the preferences daemon writes a suite's file (a binary plist, when it likes): the torn reads
  // of a suite's file are measured on Linux only.
  #if os(Linux)
    let tornWriters: [(String, TornReads.Writer)] = [("torn_reads_ours", .suiteStore), ("torn_reads_plain", .plain)]
  #else
    let tornWriters: [(String, TornReads.Writer)] = []
    for name in ["torn_reads_ours", "torn_reads_plain"] where settings.wants(name) {
      report.add(name, .nan, target: "-", detail: "Linux only: the preferences daemon writes the suite's file here")
    }
  #endif
  for (name, writer) in tornWriters where settings.wants(name) {
    let counted = try TornReads.measure(writer)
    // A reader that takes no lock: measured and reported, no target (readers using the library see no torn file:
    // tested, not measured here).
    report.add(
      name, Double(counted.torn), target: "-", detail: "of \(counted.reads) reads during 50 saves", decimals: 0,
      extras: ["reads": Double(counted.reads)])
  }

  // The file store (`DefaultsStore(fileURL:)`), against raw corelibs in the same run.
  row("file_store_bulk_new_keys_speedup_8000", FileStores.bulkNewKeys(settings), target: "≥ 100")
  row("file_store_read_ratio", FileStores.read(settings), target: "≤ 0.1")
  row("file_store_write_ratio", FileStores.write(settings), target: "≤ 0.2")
  row("file_store_write_growth_10000", FileStores.writeGrowth(settings), target: "≤ 1.2")
  if settings.wants("file_store_torn_reads") {
    let fileTorn = try TornReads.measure(.fileStore)
    report.add(
      "file_store_torn_reads", Double(fileTorn.torn), target: "0",
      detail: "of \(fileTorn.reads) reads during 50 saves", decimals: 0, extras: ["reads": Double(fileTorn.reads)])
  }
  try latencyRows("file_store_cross_process", p50: "≤ 0.5", p99: "≤ 1") {
    try CrossProcess.measure(samples: samples, fileStore: true)
  }

  // Sync across devices: the cost on the writing thread, and a write's way to another device through a folder.
  row("sync_write_overhead", SyncScenarios.writeOverhead(settings), target: "≤ 1.5")
  // The sync waits 50 ms for more local writes before stamping and pushing them (one run for a burst).
  latencyRows("sync_folder", p50: "≤ 100", p99: "≤ 250") { SyncScenarios.folderLatency(samples: samples) }
  if settings.wants("sync_folder_pull_2000_devices_ms") {
    // The same change in a folder of one device file, measured in the same run: what 2,000 devices add to it.
    let changes = settings.quick ? 30 : 100
    let alone = try SyncScenarios.folderPull(devices: 1, changes: changes)
    let cost = try SyncScenarios.folderPull(devices: 2_000, changes: changes)
    report.add(
      "sync_folder_pull_2000_devices_ms", cost, target: "≤ 2",
      detail: String(format: "CPU per remote change (1 device file: %.2f ms)", alone), extras: ["one_device_ms": alone])
  }

  // The tool: `rdefaults import` and `export` of 100,000 keys ÷ Python's plistlib load + dump of the same file.
  if settings.wants("cli_import_100k_vs_python", "cli_export_100k_vs_python") {
    if let measured = try ImportExport.measure(settings) {
      row("cli_import_100k_vs_python", measured.import, target: "≤ 0.5")
      row("cli_export_100k_vs_python", measured.export, target: "≤ 0.5")
    } else {
      for name in ["cli_import_100k_vs_python", "cli_export_100k_vs_python"] {
        report.add(name, .nan, target: "≤ 0.5", detail: "n/a: no python3 on the PATH")
      }
    }
  }

  if let chartPath = settings.chartPath {
    let panels = try Curves.measure(settings, fanout: fanouts, readAfterWrite: readAfterWrite.map(\.1))
    try Data(Curves.render(panels).utf8).write(to: URL(fileURLWithPath: chartPath))
    for panel in panels {
      print(
        "chart, \(panel.title): "
          + zip(Curves.series, panel.values).map { name, values in
            "\(name) " + values.map { String(format: "%.0f", $0) }.joined(separator: "/")
          }.joined(separator: "; ") + " ns at 100/1,000/10,000 keys")
    }
  }

  let seconds = Date().timeIntervalSince(started)
  print(report.table(quick: settings.quick, seconds: seconds))
  if let path = settings.jsonPath {
    try report.json(quick: settings.quick, seconds: seconds).write(to: URL(fileURLWithPath: path))
  }
}
