// One worker process of a randomized history: its threads run their operations at once, each logged on the clock
// every process shares; then it saves, reports, and waits for the driver's settle line to check its observers.
import Dispatch
import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Whether the histories run over file stores (`check --file-stores`, passed to the workers as
/// `HISTORY_FILE_STORES=1`): each checked suite is then a file store (``HistoryPlan/filePath(_:root:)``), the tools
/// address it with `--file`, and the plain writer is another program that replaces its file without the lock.
let historyUsesFileStores = ProcessInfo.processInfo.environment["HISTORY_FILE_STORES"] == "1"

/// Whether a label stands for a file store in this history (a side target keeps its kind).
func isFileStore(_ label: String) -> Bool {
  HistoryPlan.isSideTarget(label) ? HistoryPlan.isSideFileStore(label) : historyUsesFileStores
}

/// The store of a history's suite: by suite name, or the file store of its file below `folder`.
func historyStore(_ label: String, folder: String) -> DefaultsStore? {
  isFileStore(label)
    ? DefaultsStore(fileURL: URL(fileURLWithPath: HistoryPlan.filePath(label, root: folder)))
    : DefaultsStore(suiteName: HistoryPlan.suiteName(label))
}

/// How `rdefaults` names a history's suite: its name, or `--file PATH`.
func toolTarget(_ label: String, folder: String) -> [String] {
  isFileStore(label) ? ["--file", HistoryPlan.filePath(label, root: folder)] : [HistoryPlan.suiteName(label)]
}

/// The file a history's suite is kept in.
func historyFile(_ label: String, folder: String) -> String {
  isFileStore(label) ? HistoryPlan.filePath(label, root: folder) : folder + "/\(HistoryPlan.suiteName(label)).plist"
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

/// One operation of a plan line (``HistoryPlan``).
enum WorkerOperation {
  case pause(microseconds: Int)
  case open(String)
  /// Drops the thread's store of the suite (its observers stay: their tokens keep their hub).
  case release(String)
  case write(String, key: String)
  case remove(String, key: String)
  case read(String, key: String)
  case update(String, key: String)
  case edit(String, keys: [String])
  case flush(String)
  case refresh(String)
  case observe(String, key: String)
  case cancel(String, key: String)
  /// An observer after which the thread does nothing more (``HistoryPlan/make(seed:)``).
  case quiet(String, key: String)
  /// Opens a side target's store, writes it and observes it, or, when the thread holds it, cancels and releases it.
  case busy(String)
  case toolWrite(String, key: String)
  case toolDelete(String)
  case toolImport(String, keys: [String])
  case unlink(String)
  case plain(key: String)

  init?(_ line: String) {
    let words = line.split(separator: " ").map(String.init)
    guard let name = words.first else { return nil }
    let suite = words.count > 1 ? words[1] : ""
    let keys = Array(words.dropFirst(2))
    let key = keys.first ?? ""
    switch name {
    case "pause": self = .pause(microseconds: Int(suite) ?? 0)
    case "open": self = .open(suite)
    case "release": self = .release(suite)
    case "write": self = .write(suite, key: key)
    case "remove": self = .remove(suite, key: key)
    case "read": self = .read(suite, key: key)
    case "update": self = .update(suite, key: key)
    case "edit": self = .edit(suite, keys: keys)
    case "flush": self = .flush(suite)
    case "refresh": self = .refresh(suite)
    case "observe": self = .observe(suite, key: key)
    case "cancel": self = .cancel(suite, key: key)
    case "quiet": self = .quiet(suite, key: key)
    case "busy": self = .busy(suite)
    case "toolwrite": self = .toolWrite(suite, key: key)
    case "tooldelete": self = .toolDelete(suite)
    case "toolimport": self = .toolImport(suite, keys: keys)
    case "unlink": self = .unlink(suite)
    case "plain": self = .plain(key: suite)
    default: return nil
    }
  }

  /// The name logged, the suite label, the keys, and how many new values it writes (one per key) or whether it
  /// removes.
  var logged: (name: String, suite: String, keys: [String], writes: Bool, removes: Bool) {
    switch self {
    case .pause: ("pause", "", [], false, false)
    case .open(let suite): ("open", suite, [], false, false)
    case .release(let suite): ("release", suite, [], false, false)
    case .write(let suite, let key): ("write", suite, [key], true, false)
    case .remove(let suite, let key): ("remove", suite, [key], false, true)
    case .read(let suite, let key): ("read", suite, [key], false, false)
    case .update(let suite, let key): ("update", suite, [key], true, false)
    case .edit(let suite, let keys): ("edit", suite, keys, true, false)
    case .flush(let suite): ("flush", suite, [], false, false)
    case .refresh(let suite): ("refresh", suite, [], false, false)
    case .observe(let suite, let key): ("observe", suite, [key], false, false)
    case .cancel(let suite, let key): ("cancel", suite, [key], false, false)
    case .quiet(let suite, let key): ("quiet", suite, [key], false, false)
    case .busy(let suite): ("busy", suite, [], false, false)
    case .toolWrite(let suite, let key): ("toolwrite", suite, [key], true, false)
    case .toolDelete(let suite): ("tooldelete", suite, [], false, false)
    case .toolImport(let suite, let keys): ("toolimport", suite, keys, true, false)
    case .unlink(let suite): ("unlink", suite, [], false, false)
    case .plain(let key): ("plain", "P", [key], true, false)
    }
  }
}

/// An observer a worker registered, and the last value it was told.
final class HistoryObserver: Sendable {
  let id: Int
  let suite: String
  let key: String
  let isQuiet: Bool
  let last = Guarded<Int?>(nil)
  let changed = DispatchSemaphore(value: 0)
  let token = Guarded<DefaultsObservation?>(nil)

  init(id: Int, suite: String, key: String, isQuiet: Bool) {
    self.id = id
    self.suite = suite
    self.key = key
    self.isQuiet = isQuiet
  }
}

/// What the threads of one worker share: its log, its folder, and the counters that make values and observer ids
/// unique in the history.
final class HistoryWorker: Sendable {
  let index: Int
  let log: EventLog
  let folder: String
  private let counters = Guarded((value: 0, observer: 0))

  init(index: Int, folder: String) {
    self.index = index
    self.log = EventLog(worker: index)
    self.folder = folder
  }

  /// A value no other write of the history stores.
  func nextValue() -> Int {
    (index + 1) * 1_000_000
      + counters.withLock { counters in
        counters.value += 1
        return counters.value
      }
  }

  func nextObserverID() -> Int {
    counters.withLock { counters in
      counters.observer += 1
      return counters.observer
    }
  }

  func key(_ name: String) -> DefaultsKey<Int> { DefaultsKey(name, default: -1) }

  /// A store of `suite` whose issues are logged.
  func open(_ suite: String) -> DefaultsStore {
    let store = historyStore(suite, folder: folder)!
    let log = log
    let index = index
    store.issueHandler = { issue in
      log.log(HistoryEvent(event: "issue", worker: index, suite: suite, time: monotonicNow(), message: "\(issue)"))
    }
    return store
  }

  /// Registers an observer of `key` in `store` that logs each value it is told.
  func observe(_ store: DefaultsStore, suite: String, key name: String, thread: Int, quiet: Bool) -> HistoryObserver {
    let observer = HistoryObserver(id: nextObserverID(), suite: suite, key: name, isQuiet: quiet)
    let log = log
    let index = index
    let token = store.property(key(name)).observe { value in
      observer.last.withLock { $0 = value }
      log.log(
        HistoryEvent(
          event: "observed", worker: index, thread: thread, suite: suite, keys: [name], values: [value],
          time: monotonicNow(), observer: observer.id, quiet: quiet ? true : nil))
      observer.changed.signal()
    }
    observer.token.withLock { $0 = token }
    return observer
  }
}

/// One thread of a worker: its stores, observers and side targets, used by that thread alone (and read by the
/// worker's main thread once it has finished).
final class WorkerThread: @unchecked Sendable {  // one thread at a time: its own, then the joining main thread
  let worker: HistoryWorker
  let number: Int
  let operations: [String]
  var stores: [String: DefaultsStore] = [:]
  var observers: [HistoryObserver] = []
  var sides: [String: (store: DefaultsStore, token: DefaultsObservation)] = [:]

  init(worker: HistoryWorker, number: Int, operations: [String]) {
    self.worker = worker
    self.number = number
    self.operations = operations
  }

  private func store(_ suite: String) -> DefaultsStore {
    if let store = stores[suite] { return store }
    let store = worker.open(suite)
    stores[suite] = store
    return store
  }

  private func tool(_ arguments: [String]) -> Bool {
    runProgram(helperFolder.appendingPathComponent("rdefaults").path, arguments) == 0
  }

  /// Runs the thread's operations, logging each; stops after a quiet observer.
  func run() {
    let folder = worker.folder
    let key = worker.key
    for (position, line) in operations.enumerated() {
      guard let operation = WorkerOperation(line) else { continue }
      if case .pause(let microseconds) = operation {
        usleep(UInt32(microseconds))  // pacing of the workload, not synchronisation
        continue
      }
      let (name, suite, keys, writes, removes) = operation.logged
      let values = writes ? keys.map { _ in worker.nextValue() } : removes ? [-1] : []
      worker.log.log(
        HistoryEvent(
          event: "begin", worker: worker.index, thread: number, index: position, operation: name, suite: suite,
          keys: keys, values: values, time: monotonicNow()))
      var ok = true
      var readValues: [Int]?
      var innerReads: [Int]?
      var failure: String?
      func attempt(_ body: () throws -> Void) {
        do { try body() } catch {
          ok = false
          failure = "\(error)"
        }
      }
      switch operation {
      case .pause: break
      case .open: stores[suite] = worker.open(suite)
      case .release: stores[suite] = nil
      case .write(_, let name): store(suite)[key(name)] = values[0]
      case .remove(_, let name): store(suite).reset(key(name))
      case .read(_, let name): readValues = [store(suite)[key(name)]]
      case .update(_, let name):
        var old = -2
        attempt {
          try store(suite).property(key(name)).update { value in
            old = value
            value = values[0]
          }
        }
        innerReads = ok ? [old] : nil
      case .edit(_, let names):
        attempt {
          innerReads = try store(suite).edit { tx in
            let before = names.map { tx[key($0)] }
            for (name, value) in zip(names, values) { tx[key(name)] = value }
            return before
          }
        }
      case .flush: attempt { try store(suite).save() }
      case .refresh: store(suite).refresh()
      case .observe(_, let name), .quiet(_, let name):
        let isQuiet = if case .quiet = operation { true } else { false }
        observers.append(worker.observe(store(suite), suite: suite, key: name, thread: number, quiet: isQuiet))
        // A quiet observer's store is dropped at once: only the observer keeps its hub, and nothing of this process
        // reads, refreshes or saves the suite again.
        if isQuiet { stores[suite] = nil }
      case .cancel(_, let name):
        if let found = observers.firstIndex(where: { $0.suite == suite && $0.key == name && !$0.isQuiet }) {
          observers.remove(at: found).token.withLock { $0 }?.cancel()
        }
      case .busy:
        if let held = sides.removeValue(forKey: suite) {
          held.token.cancel()
        } else {
          let side = worker.open(suite)
          side[key("k0")] = worker.nextValue()
          sides[suite] = (side, side.property(key("k1")).observe { _ in })
        }
      case .toolWrite(_, let name):
        ok = tool(["write"] + toolTarget(suite, folder: folder) + [name, "-int", "\(values[0])"])
      case .toolDelete: ok = tool(["delete"] + toolTarget(suite, folder: folder))
      case .toolImport(_, let names):
        let input = folder + "/import-\(worker.index)-\(number)-\(position).plist"
        let entries = Dictionary(uniqueKeysWithValues: zip(names, values.map { NSNumber(value: $0) }))
        let bytes = try? PropertyListSerialization.data(fromPropertyList: entries, format: .xml, options: 0)
        ok = FileManager.default.createFile(atPath: input, contents: bytes)
        ok = ok && tool(["import"] + toolTarget(suite, folder: folder) + [input])
        unlink(input)
      case .unlink: ok = unlink(historyFile(suite, folder: folder)) == 0 || errno == ENOENT
      case .plain(let name) where historyUsesFileStores:
        // Another program that rewrites the file without the lock (it alone writes it): a whole new file, renamed.
        ok = replaceWithoutLock(historyFile("P", folder: folder), key: name, value: values[0])
      case .plain(let name):
        let defaults = UserDefaults(suiteName: HistoryPlan.suiteName("P"))!
        defaults.set(values[0], forKey: name)
        ok = defaults.synchronize()
      }
      worker.log.log(
        HistoryEvent(
          event: "done", worker: worker.index, thread: number, index: position, operation: name, suite: suite,
          keys: keys, values: readValues ?? values, reads: innerReads, ok: ok, time: monotonicNow(), message: failure))
      if case .quiet = operation { return }
    }
  }
}

func runWorker(planPath: String, index: Int) -> Never {
  guard let data = FileManager.default.contents(atPath: planPath),
    let plan = try? JSONDecoder().decode(HistoryPlan.self, from: data)
  else { exit(64) }
  // A group of its own (Foundation's `Process` already starts it so; this holds however it was started): the
  // driver's kill then takes the tools this worker starts (``runProgram``, which keeps them in this group) with it.
  setpgid(0, 0)
  let worker = HistoryWorker(index: index, folder: ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? "")
  // `HISTORY_TRACE=1`: each save's trace in the log (see `HISTORY_DUMP`), for reading a failure.
  if ProcessInfo.processInfo.environment["HISTORY_TRACE"] != nil {
    DefaultsStore.traceSaves { line in
      worker.log.log(HistoryEvent(event: "trace", worker: index, time: monotonicNow(), message: line))
    }
  }
  let isPlainWriter = index == plan.workers.count
  let threads = (isPlainWriter ? [plan.plainWriter] : plan.workers[index]).enumerated().map {
    WorkerThread(worker: worker, number: $0.offset, operations: $0.element)
  }
  // Every thread at once, each a thread of its own (not Dispatch's, which the library's background work uses).
  let finished = DispatchGroup()
  for thread in threads {
    finished.enter()
    Thread {
      thread.run()
      finished.leave()
    }.start()
  }
  finished.wait()
  // Writes stop: stores released with writes unsaved save in the background; then every suite this process wrote
  // saves (logged as flushes, which acknowledge what they save), on a thread numbered after the plan's. The suites of
  // quiet observers are left alone: nothing of this process may tell those observers what changed.
  DefaultsStore.saveEverything()
  let closing = threads.count
  let quietSuites = Set(threads.flatMap { $0.observers.filter(\.isQuiet).map(\.suite) })
  var stores: [String: DefaultsStore] = [:]
  for thread in threads {
    for line in thread.operations {
      guard let operation = WorkerOperation(line) else { continue }
      switch operation {
      case .write(let suite, _), .remove(let suite, _), .update(let suite, _), .edit(let suite, _):
        if !quietSuites.contains(suite) { stores[suite] = stores[suite] ?? worker.open(suite) }
      default: break
      }
    }
  }
  for (offset, (suite, store)) in stores.sorted(by: { $0.key < $1.key }).enumerated() {
    worker.log.log(
      HistoryEvent(
        event: "begin", worker: index, thread: closing, index: offset, operation: "flush", suite: suite,
        time: monotonicNow()))
    var ok = true
    do { try store.save() } catch { ok = false }
    worker.log.log(
      HistoryEvent(
        event: "done", worker: index, thread: closing, index: offset, operation: "flush", suite: suite, ok: ok,
        time: monotonicNow()))
  }
  worker.log.log(HistoryEvent(event: "quiet", worker: index, time: monotonicNow()))
  // The driver answers with the files' contents once every process is quiet: each observer must reach them on its
  // own (within the settle time), and at once after refresh().
  guard let line = readLine(),
    let settle = try? JSONDecoder().decode([String: [String: Int]].self, from: Data(line.utf8))
  else { exit(0) }
  let scale = Double(ProcessInfo.processInfo.environment["TEST_TIMEOUT_SCALE"] ?? "").map { max($0, 1) } ?? 1
  let settleTime = (Double(ProcessInfo.processInfo.environment["HISTORY_SETTLE_MS"] ?? "") ?? 2000) * scale
  let deadline = DispatchTime.now() + .milliseconds(Int(settleTime))
  let observers = threads.flatMap(\.observers)
  for observer in observers {
    let expected = settle[observer.suite]?[observer.key] ?? -1
    while observer.last.withLock({ $0 }) != expected && observer.changed.wait(timeout: deadline) == .success {}
    worker.log.log(
      HistoryEvent(
        event: "converged", worker: index, suite: observer.suite, keys: [observer.key],
        values: [observer.last.withLock { $0 } ?? -3], time: monotonicNow(), observer: observer.id,
        quiet: observer.isQuiet ? true : nil))
  }
  // Every suite this process used, through a store of its own now (a thread's store may have been released).
  var every: [String: DefaultsStore] = [:]
  for suite in Set(observers.map(\.suite)).union(threads.flatMap { $0.stores.keys }) where suite != "P" {
    every[suite] = worker.open(suite)
  }
  for store in every.values { store.refresh() }
  for observer in observers {
    worker.log.log(
      HistoryEvent(
        event: "refreshed", worker: index, suite: observer.suite, keys: [observer.key],
        values: [observer.last.withLock { $0 } ?? -3], time: monotonicNow(), observer: observer.id,
        quiet: observer.isQuiet ? true : nil))
  }
  for (suite, store) in every.sorted(by: { $0.key < $1.key }) {
    for name in HistoryPlan.keys {
      worker.log.log(
        HistoryEvent(
          event: "final", worker: index, suite: suite, keys: [name], values: [store[worker.key(name)]],
          time: monotonicNow()))
    }
  }
  for observer in observers { observer.token.withLock { $0 }?.cancel() }
  exit(0)
}
