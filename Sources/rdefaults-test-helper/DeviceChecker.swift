// `rdefaults-test-helper devices`: randomized histories of devices that sync (DevicePlan; DeviceRun, DeviceProcessRun),
// checked against the sync's contract (DeviceHistory.violations); a failing history is shrunk and printed as a plan to
// replay.
import Foundation
import HistoryChecker

/// `devices [--seeds A,B] [--histories N] [--first-seed N] [--seconds S] [--folder | --both | --processes | --all]
/// [--plan FILE]`: runs the histories of the seeds given (over the cloud model; the folder; both; devices that are
/// processes over real suites, killed at random; all three), or N histories (or as many as fit in S seconds) from the
/// first seed; prints one line per failure (its seed, the rules it broke, the shrunk plan's file), then "checked N
/// histories, F failed", and exits with 1 when one failed.
func runDeviceChecker(_ arguments: [String]) -> Never {
  var seeds: [UInt64]?
  var histories = 100
  var firstSeed: UInt64 = 1
  var seconds: Double?
  /// Each seed's histories: (over the folder, devices as processes).
  var kinds = [(folder: false, processes: false)]
  var planPath: String?
  var index = 0
  func value() -> String {
    index += 1
    guard index < arguments.count else {
      FileHandle.standardError.write(Data("devices: \(arguments[index - 1]) needs a value\n".utf8))
      exit(64)
    }
    return arguments[index]
  }
  while index < arguments.count {
    switch arguments[index] {
    case "--seeds": seeds = value().split(separator: ",").compactMap { UInt64($0) }
    case "--histories": histories = Int(value()) ?? histories
    case "--first-seed": firstSeed = UInt64(value()) ?? firstSeed
    case "--seconds": seconds = Double(value())
    case "--folder": kinds = [(true, false)]
    case "--both": kinds = [(false, false), (true, false)]
    case "--processes": kinds = [(true, true)]
    case "--all": kinds = [(false, false), (true, false), (true, true)]
    case "--plan": planPath = value()
    default:
      FileHandle.standardError.write(Data("devices: unknown argument \(arguments[index])\n".utf8))
      exit(64)
    }
    index += 1
  }
  #if !os(Linux)
    if kinds.contains(where: \.processes) {
      // A device process's suite is its own only through its XDG_CONFIG_HOME, which the preferences daemon ignores.
      FileHandle.standardError.write(Data("devices: --processes and --all need Linux's suite files\n".utf8))
      exit(64)
    }
  #endif
  if let planPath {
    guard let data = FileManager.default.contents(atPath: planPath),
      let plan = try? JSONDecoder().decode(DevicePlan.self, from: data)
    else {
      FileHandle.standardError.write(Data("devices: \(planPath) is not a plan\n".utf8))
      exit(64)
    }
    let found = runPlan(plan).violations(of: plan)
    let lines = found.map { "  \($0)\n" }.joined() + (found.isEmpty ? "the plan passes\n" : "the plan fails\n")
    FileHandle.standardOutput.write(Data(lines.utf8))
    exit(found.isEmpty ? 0 : 1)
  }
  let started = Date()
  var checked = 0
  var (kills, lostWrites, refusals) = (0, 0, 0)
  var failed = 0
  var seed = firstSeed
  let list = seeds
  while true {
    let next: UInt64
    if let list {
      guard checked < list.count * kinds.count else { break }
      next = list[checked / kinds.count]
    } else {
      if let seconds {
        guard Date().timeIntervalSince(started) < seconds else { break }
      } else {
        guard checked < histories * kinds.count else { break }
      }
      next = seed
    }
    let kind = kinds[checked % kinds.count]
    let plan = DevicePlan.make(seed: next, folder: kind.folder, processes: kind.processes)
    let history = runPlan(plan)
    let found = history.violations(of: plan)
    (kills, lostWrites) = (kills + history.kills, lostWrites + history.writes.filter(\.undone).count)
    refusals += history.refusals
    checked += 1
    if list == nil && checked % kinds.count == 0 { seed += 1 }
    guard !found.isEmpty else { continue }
    failed += 1
    let shrunk = shrink(plan)
    let suffix = plan.processes ? "-processes" : plan.folder ? "-folder" : ""
    let path = NSTemporaryDirectory() + "device-plan-\(next)\(suffix).json"
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    do {
      try encoder.encode(shrunk).write(to: URL(fileURLWithPath: path))
    } catch {
      FileHandle.standardOutput.write(Data("  (the shrunk plan could not be written to \(path): \(error))\n".utf8))
    }
    var report =
      "FAIL seed \(next)\(plan.processes ? " (processes)" : plan.folder ? " (folder)" : ""): "
      + "\(shrunk.operations.count) operations after "
      + "shrinking; --plan \(path)\n"
    for violation in found.prefix(3) { report += "  found: \(violation)\n" }
    for violation in runPlan(shrunk).violations(of: shrunk).prefix(5) { report += "  shrunk: \(violation)\n" }
    FileHandle.standardOutput.write(Data(report.utf8))
  }
  var summary = "checked \(checked) histories, \(failed) failed"
  if kinds.contains(where: \.folder) { summary += "; \(refusals) hostile entries refused and reported" }
  if kinds.contains(where: \.processes) {
    summary += "; \(kills) processes killed, \(lostWrites) writes undone (by a kill before their save, or offline)"
  }
  FileHandle.standardOutput.write(Data((summary + "\n").utf8))
  exit(failed == 0 ? 0 : 1)
}

/// The plan with every operation dropped whose loss keeps it failing, tried from the last one back.
private func shrink(_ plan: DevicePlan) -> DevicePlan {
  var current = plan
  var index = current.operations.count - 1
  while index >= 0 {
    let smaller = current.dropping(index)
    if !runPlan(smaller).violations(of: smaller).isEmpty { current = smaller }
    index -= 1
  }
  return current
}

/// What a run of the plan left: devices in this process, or processes of their own.
private func runPlan(_ plan: DevicePlan) -> DeviceHistory {
  plan.processes ? DeviceProcessRun(plan).run() : DeviceRun(plan).run()
}
