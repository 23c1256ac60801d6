// The randomized multi-process history checker: a driver (`check`) that runs plans in fresh preferences folders,
// each worker a process of this executable (`worker`), and checks every history (HistoryChecker).
import Dispatch
import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The monotonic clock every process of the machine shares, in nanoseconds.
func monotonicNow() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A value behind an `NSLock`: a pthread mutex, which ThreadSanitizer understands (on Linux it cannot see
/// `Synchronization.Mutex`, and the helper runs under the sanitizer in CI).
final class Guarded<Value>: @unchecked Sendable {  // `value` is only touched under `lock`
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}

/// Writes one JSON line to standard output at once (a killed worker leaves every line it logged).
final class EventLog: Sendable {
  private let lock = Guarded(())
  let worker: Int

  init(worker: Int) { self.worker = worker }

  func log(_ event: HistoryEvent) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    guard var line = try? encoder.encode(event) else { return }
    line.append(UInt8(ascii: "\n"))
    lock.withLock { _ in
      line.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
          let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
          if written <= 0 {
            if errno == EINTR { continue }
            return
          }
          offset += written
        }
      }
    }
  }
}

/// The folder of this executable (where `rdefaults` is built too).
let helperFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()

/// Runs a program to completion, its output discarded; its exit status (-1 when it could not start, or did not
/// exit normally).
///
/// Started with `posix_spawn` and no flags, not with Foundation's `Process`: `Process` puts each child in a process
/// group of its own (`POSIX_SPAWN_SETPGROUP`), so a tool a worker started outlived the kill of the worker's group and
/// went on saving after the driver had read the files, which read as an anomaly of the library. A child started here
/// stays in the worker's group and dies with it.
func runProgram(_ path: String, _ arguments: [String], environment: [String: String]? = nil) -> Int32 {
  // Allocated, not a local: the type is a struct in Glibc and a pointer in Darwin; `init` fills it either way.
  let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
  defer { actions.deallocate() }
  guard posix_spawn_file_actions_init(actions) == 0 else { return -1 }
  defer { posix_spawn_file_actions_destroy(actions) }
  posix_spawn_file_actions_addopen(actions, 1, "/dev/null", O_WRONLY, 0)
  posix_spawn_file_actions_addopen(actions, 2, "/dev/null", O_WRONLY, 0)
  let variables = environment ?? ProcessInfo.processInfo.environment
  var environment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
  defer { environment.forEach { free($0) } }
  var argv = ([path] + arguments).map { strdup($0) } + [nil]
  defer { argv.forEach { free($0) } }
  var pid = pid_t()
  guard posix_spawn(&pid, path, actions, nil, &argv, &environment) == 0 else { return -1 }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    if errno != EINTR { return -1 }
  }
  // WIFEXITED and WEXITSTATUS, which Swift does not import (macros).
  return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
}

// MARK: The worker

/// One worker process: runs its operations, logging each, then waits for the driver's `settle` line.
/// Whether the histories run over file stores (`check --file-stores`, passed to the workers as
/// `HISTORY_FILE_STORES=1`): each suite `sN` is then the file store over `sN.plist` in the same folder, the tools
/// address it with `--file`, and the plain writer is another program that replaces its file without the lock.
let historyUsesFileStores = ProcessInfo.processInfo.environment["HISTORY_FILE_STORES"] == "1"

/// The store of a history's suite: by suite name, or the file store of `<name>.plist` in `folder`.
func historyStore(_ name: String, folder: String) -> DefaultsStore? {
  historyUsesFileStores
    ? DefaultsStore(fileURL: URL(fileURLWithPath: folder + "/\(name).plist")) : DefaultsStore(suiteName: name)
}

/// How `rdefaults` names a history's suite: its name, or `--file PATH`.
func toolTarget(_ name: String, folder: String) -> [String] {
  historyUsesFileStores ? ["--file", folder + "/\(name).plist"] : [name]
}

/// Sets `key` in the property list at `path` as a program that takes no lock does: read, change, write a new file,
/// rename it over the old one.
func replaceWithoutLock(_ path: String, key: String, value: Int) -> Bool {
  var root: [String: Any] = [:]
  if let bytes = FileManager.default.contents(atPath: path) {
    guard let read = try? PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any] else {
      return false
    }
    root = read
  }
  root[key] = value
  guard let bytes = try? PropertyListSerialization.data(fromPropertyList: root, format: .xml, options: 0) else {
    return false
  }
  let temporary = path + ".plain-\(getpid())"
  guard FileManager.default.createFile(atPath: temporary, contents: bytes) else { return false }
  return rename(temporary, path) == 0
}

func runWorker(planPath: String, index: Int) -> Never {
  guard let data = FileManager.default.contents(atPath: planPath),
    let plan = try? JSONDecoder().decode(HistoryPlan.self, from: data)
  else { exit(64) }
  // A group of its own (Foundation's `Process` already starts it so; this holds however it was started): the
  // driver's kill then takes the tools this worker starts (``runProgram``, which keeps them in this group) with it.
  setpgid(0, 0)
  let isPlainWriter = index == plan.workers.count
  let operations = isPlainWriter ? plan.plainWriter : plan.workers[index]
  let log = EventLog(worker: index)
  let folder = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? ""
  // `HISTORY_TRACE=1`: each save's trace in the log (see `HISTORY_DUMP`), for reading a failure.
  if ProcessInfo.processInfo.environment["HISTORY_TRACE"] != nil {
    DefaultsStore.traceSaves { line in
      log.log(HistoryEvent(event: "trace", worker: index, time: monotonicNow(), message: line))
    }
  }
  var stores: [String: DefaultsStore] = [:]
  var sequence = 0
  func nextValue() -> Int {
    sequence += 1
    return (index + 1) * 1_000_000 + sequence
  }
  func key(_ name: String) -> DefaultsKey<Int> { DefaultsKey(name, default: -1) }
  func open(_ suite: String) -> DefaultsStore {
    let store = historyStore(HistoryPlan.suiteName(suite), folder: folder)!
    store.issueHandler = { issue in
      log.log(HistoryEvent(event: "issue", worker: index, suite: suite, time: monotonicNow(), message: "\(issue)"))
    }
    stores[suite] = store
    return store
  }
  func store(_ suite: String) -> DefaultsStore { stores[suite] ?? open(suite) }

  final class Observer: Sendable {
    let id: Int
    let suite: String
    let key: String
    let last = Guarded<Int?>(nil)
    let changed = DispatchSemaphore(value: 0)
    let token = Guarded<DefaultsObservation?>(nil)
    init(id: Int, suite: String, key: String) {
      self.id = id
      self.suite = suite
      self.key = key
    }
  }
  var observers: [Observer] = []
  var nextObserver = 0

  for (position, line) in operations.enumerated() {
    let words = line.split(separator: " ").map(String.init)
    let operation = words[0]
    if operation == "pause" {
      usleep(UInt32(Int(words[1]) ?? 0))  // pacing of the workload, not synchronisation
      continue
    }
    let suite = words.count > 1 ? words[1] : "P"
    var keys = Array(words.dropFirst(2))
    var values: [Int] = []
    switch operation {
    case "write", "update", "edit", "toolwrite", "toolimport", "plain": values = keys.map { _ in nextValue() }
    case "remove": values = [-1]
    default: break
    }
    if operation == "plain" {
      keys = [words[1]]
      values = [nextValue()]
    }
    let suiteLabel = operation == "plain" ? "P" : suite
    log.log(
      HistoryEvent(
        event: "begin", worker: index, index: position, operation: operation, suite: suiteLabel, keys: keys,
        values: values, time: monotonicNow()))
    var ok = true
    var readValues: [Int]?
    var innerReads: [Int]?
    var failure: String?
    let name = HistoryPlan.suiteName(suite)
    switch operation {
    case "open": _ = open(suite)
    case "write": store(suite)[key(keys[0])] = values[0]
    case "remove": store(suite).reset(key(keys[0]))
    case "read": readValues = [store(suite)[key(keys[0])]]
    case "update":
      var old = -2
      do {
        try store(suite).property(key(keys[0])).update { value in
          old = value
          value = values[0]
        }
      } catch {
        ok = false
        failure = "\(error)"
      }
      innerReads = ok ? [old] : nil
    case "edit":
      do {
        innerReads = try store(suite).edit { tx in
          let before = keys.map { tx[key($0)] }
          for (name, value) in zip(keys, values) { tx[key(name)] = value }
          return before
        }
      } catch {
        ok = false
        failure = "\(error)"
      }
    case "flush":
      do { try store(suite).save() } catch {
        ok = false
        failure = "\(error)"
      }
    case "refresh": store(suite).refresh()
    case "observe":
      nextObserver += 1
      let observer = Observer(id: nextObserver, suite: suite, key: keys[0])
      observers.append(observer)
      let token = store(suite).property(key(keys[0])).observe { value in
        observer.last.withLock { $0 = value }
        log.log(
          HistoryEvent(
            event: "observed", worker: index, suite: suite, keys: [observer.key], values: [value], time: monotonicNow(),
            observer: observer.id))
        observer.changed.signal()
      }
      observer.token.withLock { $0 = token }
    case "cancel":
      if let found = observers.firstIndex(where: { $0.suite == suite && $0.key == keys[0] }) {
        let observer = observers.remove(at: found)
        observer.token.withLock { $0 }?.cancel()
      }
    case "toolwrite":
      ok =
        runProgram(
          helperFolder.appendingPathComponent("rdefaults").path,
          ["write"] + toolTarget(name, folder: folder) + [keys[0], "-int", "\(values[0])"]) == 0
    case "tooldelete":
      ok =
        runProgram(helperFolder.appendingPathComponent("rdefaults").path, ["delete"] + toolTarget(name, folder: folder))
        == 0
    case "toolimport":
      let input = folder + "/import-\(index)-\(position).plist"
      let entries = Dictionary(uniqueKeysWithValues: zip(keys, values.map { NSNumber(value: $0) }))
      let bytes = try? PropertyListSerialization.data(fromPropertyList: entries, format: .xml, options: 0)
      ok = FileManager.default.createFile(atPath: input, contents: bytes)
      ok =
        ok
        && runProgram(
          helperFolder.appendingPathComponent("rdefaults").path, ["import"] + toolTarget(name, folder: folder) + [input]
        )
          == 0
      unlink(input)
    case "unlink": ok = unlink(folder + "/\(name).plist") == 0 || errno == ENOENT
    case "plain" where historyUsesFileStores:
      // Another program that rewrites the file without the lock (it alone writes it): a whole new file, renamed.
      ok = replaceWithoutLock(folder + "/plain.plist", key: keys[0], value: values[0])
    case "plain":
      let defaults = UserDefaults(suiteName: "plain")!
      defaults.set(values[0], forKey: keys[0])
      ok = defaults.synchronize()
    default: break
    }
    log.log(
      HistoryEvent(
        event: "done", worker: index, index: position, operation: operation, suite: suiteLabel, keys: keys,
        values: readValues ?? values, reads: innerReads, ok: ok, time: monotonicNow(), message: failure))
  }
  // Writes stop: every store saves (logged as flushes, which acknowledge what they save).
  for (offset, (suite, store)) in stores.sorted(by: { $0.key < $1.key }).enumerated() where suite != "P" {
    let position = operations.count + offset
    log.log(
      HistoryEvent(
        event: "begin", worker: index, index: position, operation: "flush", suite: suite, time: monotonicNow()))
    var ok = true
    do { try store.save() } catch { ok = false }
    log.log(
      HistoryEvent(
        event: "done", worker: index, index: position, operation: "flush", suite: suite, ok: ok, time: monotonicNow()))
  }
  log.log(HistoryEvent(event: "quiet", worker: index, time: monotonicNow()))
  // The driver answers with the files' contents once every process is quiet: each observer must reach them on its
  // own (within the settle time), and at once after refresh().
  guard let line = readLine(),
    let settle = try? JSONDecoder().decode([String: [String: Int]].self, from: Data(line.utf8))
  else { exit(0) }
  let scale = Double(ProcessInfo.processInfo.environment["TEST_TIMEOUT_SCALE"] ?? "").map { max($0, 1) } ?? 1
  let settleTime = (Double(ProcessInfo.processInfo.environment["HISTORY_SETTLE_MS"] ?? "") ?? 2000) * scale
  let deadline = DispatchTime.now() + .milliseconds(Int(settleTime))
  for observer in observers {
    let expected = settle[observer.suite]?[observer.key] ?? -1
    while observer.last.withLock({ $0 }) != expected && observer.changed.wait(timeout: deadline) == .success {}
    log.log(
      HistoryEvent(
        event: "converged", worker: index, suite: observer.suite, keys: [observer.key],
        values: [observer.last.withLock { $0 } ?? -3], time: monotonicNow(), observer: observer.id))
  }
  for store in stores.values { store.refresh() }
  for observer in observers {
    log.log(
      HistoryEvent(
        event: "refreshed", worker: index, suite: observer.suite, keys: [observer.key],
        values: [observer.last.withLock { $0 } ?? -3], time: monotonicNow(), observer: observer.id))
  }
  for (suite, store) in stores.sorted(by: { $0.key < $1.key }) {
    for name in HistoryPlan.keys {
      log.log(
        HistoryEvent(
          event: "final", worker: index, suite: suite, keys: [name], values: [store[key(name)]], time: monotonicNow()))
    }
  }
  for observer in observers { observer.token.withLock { $0 }?.cancel() }
  exit(0)
}

// MARK: The driver

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
        return event.event == "begin" && (event.index ?? -1) >= kill.afterOperation
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
      CommandLine.arguments[0], ["count", name],
      environment: ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": folder]) { $1 })
    var values: [String: Int] = [:]
    if let bytes = FileManager.default.contents(atPath: folder + "/\(name).plist") {
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

/// A smaller plan that still fails: chunks of operations removed while some run of it still finds an anomaly.
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
  var chunk = max(1, (current.workers.map(\.count).max() ?? 1) / 2)
  while chunk >= 1 && runs < budget {
    var changed = false
    for worker in current.workers.indices {
      var start = 0
      while start < current.workers[worker].count && runs < budget {
        var candidate = current
        let end = min(start + chunk, candidate.workers[worker].count)
        candidate.workers[worker].removeSubrange(start..<end)
        candidate.kills = candidate.kills.compactMap { kill in
          guard kill.worker == worker else { return kill }
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
    if !changed { chunk /= 2 }
  }
  return current
}

/// `check [--seeds A,B,…] [--histories N] [--seconds S] [--first-seed N] [--bound-ms M] [--file-stores]`: runs the
/// listed seeds (over file stores with `--file-stores`), then
/// random ones until N histories or S seconds; prints a line per failure (seed, anomalies, a shrunk plan) and a
/// summary; exits 1 on any anomaly.
func runChecker(_ arguments: [String]) -> Never {
  var seeds: [UInt64] = []
  var histories = 0
  var seconds = 0.0
  var boundMilliseconds = 250.0
  var firstSeed = UInt64(monotonicNow() % 1_000_000_007)
  var index = 0
  while index < arguments.count {
    let value = index + 1 < arguments.count ? arguments[index + 1] : ""
    switch arguments[index] {
    case "--seeds": seeds = value.split(separator: ",").compactMap { UInt64($0) }
    case "--histories": histories = Int(value) ?? 0
    case "--seconds": seconds = Double(value) ?? 0
    case "--bound-ms": boundMilliseconds = Double(value) ?? boundMilliseconds
    case "--first-seed": firstSeed = UInt64(value) ?? firstSeed
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
    if ran < seeds.count {
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
    let plan = HistoryPlan.make(seed: seed)
    let result = runHistory(plan, bound: bound)
    operations += result.operations
    if !result.anomalies.isEmpty {
      failures += 1
      report("FAILED seed \(seed):")
      for anomaly in result.anomalies.prefix(10) { report("  \(anomaly)") }
      let shrunk = shrink(plan, bound: bound, budget: 30)
      report("  shrunk plan (\(shrunk.operationCount) of \(plan.operationCount) operations), a run of it failed:")
      for (worker, operations) in shrunk.workers.enumerated() {
        report("    worker \(worker): " + operations.joined(separator: "; "))
      }
      if !shrunk.plainWriter.isEmpty { report("    plain writer: " + shrunk.plainWriter.joined(separator: "; ")) }
      for kill in shrunk.kills {
        report("    kill worker \(kill.worker) at operation \(kill.afterOperation) + \(kill.delayMicroseconds) µs")
      }
      report("  reproduce: rdefaults-test-helper check --seeds \(seed)")
    }
  }
  let elapsed = Date().timeIntervalSince(start)
  report(
    "\(ran) histories (\(operations) operations) in \(Int(elapsed)) s, bound \(Int(boundMilliseconds)) ms: "
      + "\(ran - failures) passed, \(failures) failed")
  exit(failures == 0 ? 0 : 1)
}
