// `rdefaults-test-helper devices`: randomized histories of devices that sync (DevicePlan, DeviceRun), checked against
// the sync's contract (DeviceHistory.violations); a failing history is shrunk and printed as a plan to replay.
import Foundation
import HistoryChecker

/// `devices [--seeds A,B] [--histories N] [--first-seed N] [--seconds S] [--folder | --both] [--plan FILE]`:
/// runs the histories of the seeds given, or N histories (or as many as fit in S seconds) from the first seed; prints
/// one line per failure (its seed, the rules it broke, the shrunk plan's file), then "checked N histories, F failed",
/// and exits with 1 when one failed.
func runDeviceChecker(_ arguments: [String]) -> Never {
  var seeds: [UInt64]?
  var histories = 100
  var firstSeed: UInt64 = 1
  var seconds: Double?
  var kinds = [false]
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
    case "--folder": kinds = [true]
    case "--both": kinds = [false, true]
    case "--plan": planPath = value()
    default:
      FileHandle.standardError.write(Data("devices: unknown argument \(arguments[index])\n".utf8))
      exit(64)
    }
    index += 1
  }
  if let planPath {
    guard let data = FileManager.default.contents(atPath: planPath),
      let plan = try? JSONDecoder().decode(DevicePlan.self, from: data)
    else {
      FileHandle.standardError.write(Data("devices: \(planPath) is not a plan\n".utf8))
      exit(64)
    }
    let found = DeviceRun(plan).run().violations(of: plan)
    let lines = found.map { "  \($0)\n" }.joined() + (found.isEmpty ? "the plan passes\n" : "the plan fails\n")
    FileHandle.standardOutput.write(Data(lines.utf8))
    exit(found.isEmpty ? 0 : 1)
  }
  let started = Date()
  var checked = 0
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
    let folder = kinds[checked % kinds.count]
    let plan = DevicePlan.make(seed: next, folder: folder)
    let found = DeviceRun(plan).run().violations(of: plan)
    checked += 1
    if list == nil && checked % kinds.count == 0 { seed += 1 }
    guard !found.isEmpty else { continue }
    failed += 1
    let shrunk = shrink(plan)
    let path = NSTemporaryDirectory() + "device-plan-\(next)\(folder ? "-folder" : "").json"
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    try? encoder.encode(shrunk).write(to: URL(fileURLWithPath: path))
    var report =
      "FAIL seed \(next)\(folder ? " (folder)" : ""): \(shrunk.operations.count) operations after "
      + "shrinking; --plan \(path)\n"
    for violation in found.prefix(3) { report += "  found: \(violation)\n" }
    for violation in DeviceRun(shrunk).run().violations(of: shrunk).prefix(5) { report += "  shrunk: \(violation)\n" }
    FileHandle.standardOutput.write(Data(report.utf8))
  }
  FileHandle.standardOutput.write(Data("checked \(checked) histories, \(failed) failed\n".utf8))
  exit(failed == 0 ? 0 : 1)
}

/// The plan with every operation dropped whose loss keeps it failing, tried from the last one back.
private func shrink(_ plan: DevicePlan) -> DevicePlan {
  var current = plan
  var index = current.operations.count - 1
  while index >= 0 {
    let smaller = current.dropping(index)
    if !DeviceRun(smaller).run().violations(of: smaller).isEmpty { current = smaller }
    index -= 1
  }
  return current
}
