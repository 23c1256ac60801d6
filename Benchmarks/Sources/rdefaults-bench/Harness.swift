import Foundation
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#endif

/// How hard to measure.
struct Settings {
  var quick = false
  var jsonPath: String?
  /// Where `--chart` writes the growth chart (an SVG), if asked.
  var chartPath: String?
  /// `--only`: the metrics to measure (a scenario runs when it reports one of them); nil measures every one.
  var only: Set<String>?

  /// Whether a scenario that reports any of `metrics` runs.
  func wants(_ metrics: String...) -> Bool {
    only.map { !$0.isDisjoint(with: metrics) } ?? true
  }
  var rounds: Int { quick ? 5 : 11 }
}

/// One measured pair: a baseline and ours, alternated over rounds, medians per operation.
struct Comparison {
  var baselineNanoseconds: Double
  var oursNanoseconds: Double
  /// baseline ÷ ours for speed-ups, ours ÷ baseline for overheads: set by the scenario.
  var ratio: Double
}

func nanoseconds(_ duration: Duration) -> Double {
  let parts = duration.components
  return Double(parts.seconds) * 1e9 + Double(parts.attoseconds) / 1e9
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return .nan }
  return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
}

/// Times `operations` calls of each body per round, alternating which goes first, and returns the medians of
/// the per-call times.
func compare(
  rounds: Int, operations: Int, baseline: (Int) -> Void, ours: (Int) -> Void
) -> (baseline: Double, ours: Double) {
  let clock = ContinuousClock()
  var baselineTimes: [Double] = []
  var ourTimes: [Double] = []
  // One warm-up round of each, not counted.
  for index in 0..<min(operations, 1_000) {
    baseline(index)
    ours(index)
  }
  func time(_ body: (Int) -> Void) -> Double {
    nanoseconds(clock.measure { for index in 0..<operations { body(index) } }) / Double(operations)
  }
  for round in 0..<rounds {
    if round.isMultiple(of: 2) {
      baselineTimes.append(time(baseline))
      ourTimes.append(time(ours))
    } else {
      ourTimes.append(time(ours))
      baselineTimes.append(time(baseline))
    }
  }
  return (median(baselineTimes), median(ourTimes))
}

/// Resident memory of this process in bytes, from /proc/self/statm; 0 where there is no /proc (Apple platforms:
/// the memory field is not measured there).
func residentBytes() -> Int {
  #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  #else
    return 0
  #endif
}

/// The time of one new process, `posix_spawn` to `waitpid`, started with `arguments` (the first: the executable's
/// path) and this process's environment; it must exit with 0 (`what` names it in the error).
func timeProcess(_ arguments: [String], what: String) throws -> Double {
  // The environment as `KEY=value` strings (Glibc's `environ` is not Darwin's).
  var environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
  defer { environment.forEach { free($0) } }
  var argv = arguments.map { strdup($0) } + [nil]
  defer { argv.forEach { free($0) } }
  var pid = pid_t()
  let elapsed = try ContinuousClock().measure {
    guard posix_spawn(&pid, arguments[0], nil, nil, &argv, &environment) == 0 else {
      throw BenchmarkError("cannot start \(arguments[0])")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    guard status == 0 else { throw BenchmarkError("\(what) failed (status \(status))") }
  }
  return nanoseconds(elapsed)
}

/// This executable, to start a child of the same program.
func executablePath() throws -> String {
  #if os(Linux)
    return try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
  #else
    guard let path = Bundle.main.executablePath else { throw BenchmarkError("cannot find this executable") }
    return path
  #endif
}

/// A fresh suite name, removed (with its file) by `cleanUp`.
func scratchSuite(_ label: String) -> String {
  "rdefaults-bench.\(label).\(ProcessInfo.processInfo.processIdentifier).\(UUID().uuidString.prefix(8))"
}

/// The platform's preferences folder: corelibs' on Linux (`$XDG_CONFIG_HOME` or `~/.config`), the preferences
/// daemon's on Apple platforms (`~/Library/Preferences`).
func preferencesFolder() -> String {
  DefaultsStore.preferencesFolder
}

func cleanUp(_ suite: String) {
  UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite)
  for suffix in ["", ".lock"] {
    try? FileManager.default.removeItem(atPath: preferencesFolder() + "/\(suite).plist" + suffix)
  }
  // A file store made over the same scratch name.
  cleanUpFile(scratchFolder() + "/\(suite).plist")
}

/// A fresh file store path in a scratch folder of the preferences folder, removed (with its lock file) by
/// `cleanUpFile`.
func scratchFile(_ label: String) -> String {
  scratchFolder() + "/\(label).\(ProcessInfo.processInfo.processIdentifier).\(UUID().uuidString.prefix(8)).plist"
}

/// The folder of the file stores' scratch files: in the preferences folder on Linux; a temporary folder on Apple
/// platforms, whose preferences folder is the daemon's.
func scratchFolder() -> String {
  #if os(Linux)
    preferencesFolder() + "/rdefaults-bench-files"
  #else
    NSTemporaryDirectory() + "rdefaults-bench-files"
  #endif
}

func cleanUpFile(_ path: String) {
  for suffix in ["", ".lock", ".journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}
