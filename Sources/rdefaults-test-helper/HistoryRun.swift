import ChildProcess
import Dispatch
import Foundation
import HistoryChecker

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

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
      worker.process.signalGroup(SIGKILL)
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
