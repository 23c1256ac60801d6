// The randomized multi-process history checker's driver (`check`): runs plans in fresh preferences folders
// (HistoryRun.swift), each worker a process of this executable (`worker`, HistoryWorker.swift), checks every history
// (HistoryChecker), and shrinks a failing plan (HistoryShrinker.swift).
import Foundation
import HistoryChecker

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `check [--seeds A,B,…] [--plan FILE] [--histories N] [--seconds S] [--first-seed N] [--bound-ms M]
/// [--file-stores] [--kind standard|plainThreads|updateMix]`: runs the listed seeds (over file stores with
/// `--file-stores`; plans of the kind given, ``HistoryPlan/Kind``), then random ones until N histories or S seconds;
/// with `--plan`, the plan in FILE (JSON, as a failure prints a shrunk one) N times instead. Prints a line per failure
/// (seed, anomalies, a shrunk plan) and a summary; exits 1 on any anomaly.
func runChecker(_ arguments: [String]) -> Never {
  var seeds: [UInt64] = []
  var histories = 0
  var seconds = 0.0
  var boundMilliseconds = 250.0
  var firstSeed = UInt64(monotonicNow() % 1_000_000_007)
  var fixedPlan: HistoryPlan?
  var kind = HistoryPlan.Kind.standard
  var index = 0
  while index < arguments.count {
    let value = index + 1 < arguments.count ? arguments[index + 1] : ""
    switch arguments[index] {
    case "--seeds": seeds = value.split(separator: ",").compactMap { UInt64($0) }
    case "--histories": histories = Int(value) ?? 0
    case "--seconds": seconds = Double(value) ?? 0
    case "--bound-ms": boundMilliseconds = Double(value) ?? boundMilliseconds
    case "--first-seed": firstSeed = UInt64(value) ?? firstSeed
    case "--kind":
      guard let chosen = HistoryPlan.Kind(rawValue: value) else {
        FileHandle.standardError.write(Data("unknown kind \(value)\n".utf8))
        exit(64)
      }
      kind = chosen
    case "--plan":
      guard let data = FileManager.default.contents(atPath: value),
        let plan = try? JSONDecoder().decode(HistoryPlan.self, from: data)
      else {
        FileHandle.standardError.write(Data("cannot read a plan from \(value)\n".utf8))
        exit(64)
      }
      fixedPlan = plan
    case "--file-stores":
      // Read by every process of the run: the workers, the tools' targets, the final counts.
      setenv("HISTORY_FILE_STORES", "1", 1)
      index += 1
      continue
    default:
      FileHandle.standardError.write(Data("unknown option \(arguments[index])\n".utf8))
      exit(64)
    }
    index += 2
  }
  // Slow runs (the thread sanitizer's) scale the visibility bound as the tests scale their waits.
  let scale = Double(ProcessInfo.processInfo.environment["TEST_TIMEOUT_SCALE"] ?? "").map { max($0, 1) } ?? 1
  boundMilliseconds *= scale
  let bound = UInt64(boundMilliseconds * 1_000_000)
  let start = Date()
  var ran = 0
  var operations = 0
  var failures = 0
  var next = firstSeed
  func report(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
  while true {
    let seed: UInt64
    if let fixedPlan {
      guard ran < max(histories, 1) else { break }
      seed = fixedPlan.seed
    } else if ran < seeds.count {
      seed = seeds[ran]
    } else {
      let randomDone = ran - seeds.count
      let moreByCount = histories > 0 && randomDone < histories
      let moreByTime = seconds > 0 && Date().timeIntervalSince(start) < seconds && (histories == 0 || moreByCount)
      guard moreByCount || moreByTime else { break }
      seed = next
      next &+= 1
    }
    ran += 1
    let plan = fixedPlan ?? HistoryPlan.make(seed: seed, kind: kind)
    let result = runHistory(plan, bound: bound)
    operations += result.operations
    if !result.anomalies.isEmpty {
      failures += 1
      report("FAILED seed \(seed):")
      for anomaly in result.anomalies.prefix(10) { report("  \(anomaly)") }
      let shrunk = shrink(plan, bound: bound, budget: 30)
      report("  shrunk plan (\(shrunk.operationCount) of \(plan.operationCount) operations), a run of it failed:")
      for (worker, threads) in shrunk.workers.enumerated() {
        for (thread, operations) in threads.enumerated() where !operations.isEmpty {
          report("    worker \(worker) thread \(thread): " + operations.joined(separator: "; "))
        }
      }
      if !shrunk.plainWriter.isEmpty { report("    plain writer: " + shrunk.plainWriter.joined(separator: "; ")) }
      for kill in shrunk.kills {
        report(
          "    kill worker \(kill.worker) once thread \(kill.thread) began operation \(kill.afterOperation), "
            + "\(kill.delayMicroseconds) µs later")
      }
      let shrunkJSON = (try? JSONEncoder().encode(shrunk)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
      report("  shrunk plan as JSON (check --plan FILE runs it): \(shrunkJSON)")
      report(
        "  reproduce: rdefaults-test-helper check --seeds \(seed)\(historyUsesFileStores ? " --file-stores" : "")"
          + (kind == .standard ? "" : " --kind \(kind.rawValue)"))
    }
  }
  let elapsed = Date().timeIntervalSince(start)
  report(
    "\(ran) histories (\(kind == .standard ? "" : "\(kind.rawValue), ")\(operations) operations) in \(Int(elapsed)) s, bound \(Int(boundMilliseconds)) ms: "
      + "\(ran - failures) passed, \(failures) failed")
  exit(failures == 0 ? 0 : 1)
}
