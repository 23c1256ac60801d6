// The randomized multi-process history checker's driver (`check`): runs plans in fresh preferences folders, each
// worker a process of this executable (`worker`, HistoryWorker.swift), checks every history (HistoryChecker), and
// shrinks a failing plan.
import Dispatch
import Foundation
import HistoryChecker

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Lines printed by a process, split as its output arrives.
final class LineBuffer: Sendable {
  private let state = Guarded<(lines: [String], partial: Data)>(([], Data()))
  let changed = DispatchSemaphore(value: 0)

  var lines: [String] { state.withLock { $0.lines } }

  func feed(_ data: Data) {
    state.withLock { state in
      state.partial.append(data)
      while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
        state.lines.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
        state.partial.removeSubrange(state.partial.startIndex...newline)
      }
    }
    changed.signal()
  }
}

/// A worker process and the lines it printed.
final class WorkerProcess: Sendable {
  let process: Process
  let output = LineBuffer()
  let ended = DispatchSemaphore(value: 0)
  private let input = Pipe()
  private let outputPipe: Pipe

  /// Closes this end of the pipes: a driver runs thousands of histories, and each left four descriptors open.
  func closePipes() {
    try? input.fileHandleForWriting.close()  // already closed when the worker never read its settle line
    outputPipe.fileHandleForReading.readabilityHandler = nil
    try? outputPipe.fileHandleForReading.close()  // the handler may have closed it at end of file
  }

  init(planPath: String, index: Int, folder: String) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["worker", planPath, "\(index)"]
    process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": folder]) { $1 }
    let pipe = Pipe()
    outputPipe = pipe
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    process.standardInput = input
    let output = output
    pipe.fileHandleForReading.readabilityHandler = { handle in
      let data = handle.availableData
      if data.isEmpty { handle.readabilityHandler = nil }
      output.feed(data)
    }
    let ended = ended
    process.terminationHandler = { _ in
      ended.signal()
      output.changed.signal()
    }
    try process.run()
  }

  func send(_ line: String) {
    input.fileHandleForWriting.write(Data((line + "\n").utf8))
  }

  /// Waits until a printed line satisfies `predicate`, or the process exits, or `deadline` passes.
  func wait(until predicate: (String) -> Bool, deadline: DispatchTime) -> Bool {
    while true {
      if output.lines.contains(where: predicate) { return true }
      if !process.isRunning { return output.lines.contains(where: predicate) }
      if output.changed.wait(timeout: deadline) == .timedOut { return false }
    }
  }

  /// Waits for the exit; false past `deadline`.
  func waitForExit(deadline: DispatchTime) -> Bool {
    guard ended.wait(timeout: deadline) == .success else { return false }
    ended.signal()
    return true
  }
}

/// What running one plan gave.
struct HistoryRun {
  var anomalies: [HistoryChecker.Anomaly]
  var operations: Int
}

/// Runs one plan in a fresh preferences folder and checks its history.
func runHistory(_ plan: HistoryPlan, bound: UInt64, keepFolder: Bool = false) -> HistoryRun {
  let folder = NSTemporaryDirectory() + "rdefaults-history-\(plan.seed)-\(UUID().uuidString.prefix(8))"
  do {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
  } catch {
    return HistoryRun(anomalies: [.init(rule: "driver", detail: "cannot create \(folder): \(error)")], operations: 0)
  }
  let keep = keepFolder || ProcessInfo.processInfo.environment["HISTORY_KEEP"] != nil
  defer {
    if !keep {
      do {
        try FileManager.default.removeItem(atPath: folder)
      } catch {
        FileHandle.standardError.write(Data("cannot remove \(folder): \(error)\n".utf8))
      }
    }
  }
  let planPath = folder + "/plan.json"
  guard FileManager.default.createFile(atPath: planPath, contents: try? JSONEncoder().encode(plan)) else {
    return HistoryRun(anomalies: [.init(rule: "driver", detail: "cannot write \(planPath)")], operations: 0)
  }
  var events: [HistoryEvent] = []
  var anomalies: [HistoryChecker.Anomaly] = []
  let count = plan.workers.count + (plan.plainWriter.isEmpty ? 0 : 1)
  var workers: [WorkerProcess] = []
  for index in 0..<count {
    guard let worker = try? WorkerProcess(planPath: planPath, index: index, folder: folder) else {
      return HistoryRun(anomalies: [.init(rule: "driver", detail: "worker \(index) did not start")], operations: 0)
    }
    workers.append(worker)
  }
  let limit = DispatchTime.now() + .seconds(120)
  // Kills, each on a thread of its own: once the worker has begun the operation, after the delay.
  let killGroup = DispatchGroup()
  let killEvents = Guarded<[HistoryEvent]>([])
  for kill in plan.kills where kill.worker < workers.count {
    let worker = workers[kill.worker]
    killGroup.enter()
    Thread {
      defer { killGroup.leave() }
      let begun = { (line: String) -> Bool in
        guard let event = try? JSONDecoder().decode(HistoryEvent.self, from: Data(line.utf8)) else { return false }
        // (Or the worker finished its operations: a kill then is as good as any, and nothing is waited for in vain.)
        return (event.event == "begin" && event.thread == kill.thread && (event.index ?? -1) >= kill.afterOperation)
          || event.event == "quiet"
      }
      guard worker.wait(until: begun, deadline: limit), worker.process.isRunning else { return }
      usleep(UInt32(kill.delayMicroseconds))  // the moment of the kill, not synchronisation
      // The worker's whole process group: a tool process it started must not go on writing after its parent died
      // (the worker leads a group of its own from its start, and ``runProgram`` keeps its tools in it).
      if Foundation.kill(-worker.process.processIdentifier, SIGKILL) != 0 {
        Foundation.kill(worker.process.processIdentifier, SIGKILL)
      }
      _ = worker.waitForExit(deadline: limit)
      killEvents.withLock { $0.append(HistoryEvent(event: "killed", worker: kill.worker, time: monotonicNow())) }
    }.start()
  }
  killGroup.wait()
  let killed = Set(killEvents.withLock { $0 }.map(\.worker))
  for (index, worker) in workers.enumerated() where !killed.contains(index) {
    if !worker.wait(until: { $0.contains("\"event\":\"quiet\"") }, deadline: limit) {
      anomalies.append(.init(rule: "driver", detail: "worker \(index) never finished its operations"))
    }
  }
  // Every process is quiet: the files are final. A journal left by a kill is completed by the next process that
  // opens the suite (as the contract says), so one opens each suite first.
  var final: [String: [String: Int]] = [:]
  for suite in (0..<plan.suites).map({ "\($0)" }) + (plan.plainWriter.isEmpty ? [] : ["P"]) {
    let name = HistoryPlan.suiteName(suite)
    _ = runProgram(
      CommandLine.arguments[0], ["count"] + toolTarget(suite, folder: folder),
      environment: ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": folder]) { $1 })
    var values: [String: Int] = [:]
    if let bytes = FileManager.default.contents(atPath: historyFile(suite, folder: folder)) {
      guard let root = try? PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any] else {
        anomalies.append(.init(rule: "whole files", detail: "\(name).plist is not a whole property list"))
        continue
      }
      for (key, value) in root { values[key] = (value as? NSNumber)?.intValue ?? -4 }
    }
    final[suite] = values
  }
  let settle = String(decoding: (try? JSONEncoder().encode(final)) ?? Data("{}".utf8), as: UTF8.self)
  for (index, worker) in workers.enumerated() where !killed.contains(index) {
    worker.send(settle)
    if !worker.waitForExit(deadline: limit) {
      anomalies.append(.init(rule: "driver", detail: "worker \(index) never exited"))
      worker.process.terminate()
    }
  }
  let decoder = JSONDecoder()
  for worker in workers {
    _ = worker.waitForExit(deadline: limit)
    // The last lines may still be on their way from the pipe.
    _ = worker.wait(until: { _ in false }, deadline: .now() + .milliseconds(worker.process.isRunning ? 0 : 50))
    for line in worker.output.lines {
      if let event = try? decoder.decode(HistoryEvent.self, from: Data(line.utf8)) { events.append(event) }
    }
  }
  for worker in workers { worker.closePipes() }
  events += killEvents.withLock { $0 }
  anomalies += HistoryChecker(boundNanoseconds: bound).check(events, final: final)
  if !anomalies.isEmpty, let dump = ProcessInfo.processInfo.environment["HISTORY_DUMP"] {
    // Every event in time order, and the files, for reading a failure.
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let lines = events.sorted { $0.time < $1.time }.compactMap { try? encoder.encode($0) }
    var text = lines.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
    text += "\nfinal: \(final)\n" + anomalies.map { "anomaly: \($0)\n" }.joined()
    let path = dump + "/history-\(plan.seed)-\(UUID().uuidString.prefix(6)).log"
    if !FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) {
      anomalies.append(.init(rule: "driver", detail: "cannot write \(path)"))
    }
  }
  return HistoryRun(anomalies: anomalies, operations: plan.operationCount)
}

/// A smaller plan that still fails: chunks of operations removed, thread by thread, while some run of it still finds
/// an anomaly.
func shrink(_ plan: HistoryPlan, bound: UInt64, budget: Int) -> HistoryPlan {
  var current = plan
  var runs = 0
  func fails(_ candidate: HistoryPlan) -> Bool {
    for _ in 0..<2 where runs < budget {
      runs += 1
      if !runHistory(candidate, bound: bound).anomalies.isEmpty { return true }
    }
    return false
  }
  var chunk = max(1, (current.workers.flatMap { $0.map(\.count) }.max() ?? 1) / 2)
  while chunk >= 1 && runs < budget {
    var changed = false
    for worker in current.workers.indices {
      for thread in current.workers[worker].indices {
        var start = 0
        while start < current.workers[worker][thread].count && runs < budget {
          var candidate = current
          let end = min(start + chunk, candidate.workers[worker][thread].count)
          candidate.workers[worker][thread].removeSubrange(start..<end)
          candidate.kills = candidate.kills.compactMap { kill in
            guard kill.worker == worker, kill.thread == thread else { return kill }
            guard kill.afterOperation < start || kill.afterOperation >= end else { return nil }
            var moved = kill
            if kill.afterOperation >= end { moved.afterOperation -= end - start }
            return moved
          }
          if fails(candidate) {
            current = candidate
            changed = true
          } else {
            start += chunk
          }
        }
      }
    }
    if !changed { chunk /= 2 }
  }
  return current
}

/// `check [--seeds A,B,…] [--plan FILE] [--histories N] [--seconds S] [--first-seed N] [--bound-ms M]
/// [--file-stores]`: runs the listed seeds (over file stores with `--file-stores`), then random ones until N histories
/// or S seconds; with `--plan`, the plan in FILE (JSON, as a failure prints a shrunk one) N times instead. Prints a
/// line per failure (seed, anomalies, a shrunk plan) and a summary; exits 1 on any anomaly.
func runChecker(_ arguments: [String]) -> Never {
  var seeds: [UInt64] = []
  var histories = 0
  var seconds = 0.0
  var boundMilliseconds = 250.0
  var firstSeed = UInt64(monotonicNow() % 1_000_000_007)
  var fixedPlan: HistoryPlan?
  var index = 0
  while index < arguments.count {
    let value = index + 1 < arguments.count ? arguments[index + 1] : ""
    switch arguments[index] {
    case "--seeds": seeds = value.split(separator: ",").compactMap { UInt64($0) }
    case "--histories": histories = Int(value) ?? 0
    case "--seconds": seconds = Double(value) ?? 0
    case "--bound-ms": boundMilliseconds = Double(value) ?? boundMilliseconds
    case "--first-seed": firstSeed = UInt64(value) ?? firstSeed
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
    let plan = fixedPlan ?? HistoryPlan.make(seed: seed)
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
      report("  reproduce: rdefaults-test-helper check --seeds \(seed)\(historyUsesFileStores ? " --file-stores" : "")")
    }
  }
  let elapsed = Date().timeIntervalSince(start)
  report(
    "\(ran) histories (\(operations) operations) in \(Int(elapsed)) s, bound \(Int(boundMilliseconds)) ms: "
      + "\(ran - failures) passed, \(failures) failed")
  exit(failures == 0 ? 0 : 1)
}
