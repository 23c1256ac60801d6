// rdefaults-bench: ReactiveDefaults against what users would otherwise write, measured in one run, as ratios.
//   swift run -c release --package-path Benchmarks rdefaults-bench [--quick] [--json FILE] [--chart FILE.svg]
import Foundation

var settings = Settings()
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child", arguments.count == 2 { CrossProcess.runChild(suite: arguments[1]) }
if arguments.first == "--file-child", arguments.count == 2 { CrossProcess.runChild(suite: arguments[1], file: true) }
if arguments.first == "--cold-open", arguments.count == 3 { Growth.runColdOpenChild(arguments[1], suite: arguments[2]) }
if arguments.first == "--torn-reader", arguments.count == 2 { TornReads.runReader(path: arguments[1]) }
/// The file an option names (the next argument), taken off the arguments; a usage error without one.
@MainActor func file(after option: String) -> String {
  guard !arguments.isEmpty else {
    FileHandle.standardError.write(Data("Error: \(option) needs a file.\n".utf8))
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
  case "-h", "--help":
    print("Usage: rdefaults-bench [--quick] [--json FILE] [--chart FILE.svg]")
    exit(0)
  default:
    FileHandle.standardError.write(
      Data(
        "Error: unknown argument '\(argument)'.\nUsage: rdefaults-bench [--quick] [--json FILE] [--chart FILE.svg]\n"
          .utf8))
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
  func row(_ name: String, _ comparison: Comparison, target: String) {
    report.add(
      name, comparison.ratio, target: target,
      detail: String(format: "%.0f ns vs %.0f ns", comparison.baselineNanoseconds, comparison.oursNanoseconds),
      extras: ["baseline_ns": comparison.baselineNanoseconds, "ours_ns": comparison.oursNanoseconds])
  }

  let reads = Scenarios.reads(settings)
  row("read_overhead_int", reads["read_overhead_int"]!, target: "≤ 1.3")
  row("read_overhead_string", reads["read_overhead_string"]!, target: "≤ 1.3")
  row("read_overhead_url", reads["read_overhead_url"]!, target: "-")
  row("read_overhead_codable", reads["read_overhead_codable"]!, target: "-")
  row("write_overhead_int", Scenarios.write(settings), target: "≤ 1.5")
  row("size_budget_write_overhead", Scenarios.sizeBudget(settings), target: "≤ 1.2")
  row("multikey_overhead_5", Scenarios.multiKey(settings), target: "≤ 1.5")
  row("edit_vs_flush", Scenarios.editVersusFlush(settings), target: "≤ 1.5")
  row("write_growth_10000", Growth.writeGrowth(settings), target: "≤ 1.5")
  row("cold_open_overhead_10000", try Growth.coldOpen(settings), target: "≤ 1.2")
  let readAfterWrite = [100, 1_000, 10_000].map { ($0, Scenarios.readAfterWrite(keys: $0, settings)) }
  row("rw_cycle_speedup_1000", readAfterWrite[1].1, target: "≥ 100")
  let growth = Comparison(
    baselineNanoseconds: readAfterWrite[0].1.oursNanoseconds, oursNanoseconds: readAfterWrite[2].1.oursNanoseconds,
    ratio: readAfterWrite[2].1.oursNanoseconds / readAfterWrite[0].1.oursNanoseconds)
  row("rw_cycle_growth_10000", growth, target: "≤ 2")
  var fanouts: [Comparison] = []
  for keys in [100, 1_000, 10_000] {
    let fanout = Scenarios.fanout(keys: keys, settings)
    fanouts.append(fanout)
    row("fanout_speedup_\(keys)", fanout, target: keys == 1_000 ? "≥ 100" : "grows")
  }
  row("main_actor_delivery_overhead", MainActorDelivery.measure(settings), target: "≤ 3")
  let latencies = try CrossProcess.measure(samples: settings.quick ? 100 : 300)
  report.add(
    "cross_process_p50_ms", percentile(latencies, 0.5), target: "≤ 1", detail: "\(latencies.count) samples",
    extras: ["samples": Double(latencies.count)])
  report.add(
    "cross_process_p99_ms", percentile(latencies, 0.99), target: "≤ 3",
    detail: "max \(String(format: "%.2f", latencies.max() ?? 0)) ms", extras: ["max_ms": latencies.max() ?? .nan])
  let unobserved = try CrossProcess.measure(samples: settings.quick ? 100 : 300, observed: false)
  report.add(
    "cross_process_unobserved_p99_ms", percentile(unobserved, 0.99), target: "≤ 3",
    detail: "no observer; p50 \(String(format: "%.2f", percentile(unobserved, 0.5))) ms",
    extras: ["p50_ms": percentile(unobserved, 0.5)])
  let memory = Scenarios.bytesPerObserver(settings)
  report.add(
    "bytes_per_observer", memory.bytes, target: "≤ 512", detail: "\(memory.observers) observers", decimals: 0,
    extras: ["observers": Double(memory.observers)])
  // A floor, decided with corelibs in the path (its ceiling there is about 10×): see Benchmarks/README.md.
  row("bulk_new_keys_speedup_8000", Scenarios.bulkNewKeys(settings), target: "≥ 4.5")
  // On Apple platforms the preferences daemon writes a suite's file (a binary plist, when it likes): the torn reads
  // of a suite's file are measured on Linux only.
  #if os(Linux)
    let tornWriters: [(String, TornReads.Writer)] = [("torn_reads_ours", .suiteStore), ("torn_reads_plain", .plain)]
  #else
    let tornWriters: [(String, TornReads.Writer)] = []
    for name in ["torn_reads_ours", "torn_reads_plain"] {
      report.add(name, .nan, target: "-", detail: "Linux only: the preferences daemon writes the suite's file here")
    }
  #endif
  for (name, writer) in tornWriters {
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
  let fileTorn = try TornReads.measure(.fileStore)
  report.add(
    "file_store_torn_reads", Double(fileTorn.torn), target: "0", detail: "of \(fileTorn.reads) reads during 50 saves",
    decimals: 0, extras: ["reads": Double(fileTorn.reads)])
  let fileLatencies = try CrossProcess.measure(samples: settings.quick ? 100 : 300, fileStore: true)
  report.add(
    "file_store_cross_process_p99_ms", percentile(fileLatencies, 0.99), target: "≤ 1",
    detail: "p50 \(String(format: "%.2f", percentile(fileLatencies, 0.5))) ms, \(fileLatencies.count) samples",
    extras: ["p50_ms": percentile(fileLatencies, 0.5), "samples": Double(fileLatencies.count)])

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
