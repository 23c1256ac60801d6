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

/// What the threads of one worker share: its log, its folder, and the counters that make values and observer ids
/// unique in the history.
final class HistoryWorker: Sendable {
  let index: Int
  let log: EventLog
  let folder: String
  /// The plan's seed: observers' handlers draw their work from it (``ObserverWork``).
  let seed: UInt64
  /// Writes made inside observers' handlers, stopped before the closing saves.
  let handlerWrites = HandlerWrites()
  private let counters = Guarded((value: 0, observer: 0))

  init(index: Int, folder: String, seed: UInt64) {
    self.index = index
    self.log = EventLog(worker: index)
    self.folder = folder
    self.seed = seed
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

  /// Registers an observer of `key` in `store` that logs each value it is told, then does what apps' handlers do
  /// (``ObserverWork``: takes its time, reads or writes another key; a quiet observer's only takes its time).
  func observe(_ store: DefaultsStore, suite: String, key name: String, thread: Int, quiet: Bool) -> HistoryObserver {
    let observer = HistoryObserver(id: nextObserverID(), suite: suite, key: name, isQuiet: quiet)
    let log = log
    let index = index
    let work = ObserverWork(worker: self, id: observer.id, suite: suite, key: name, store: quiet ? nil : store)
    let token = store.property(key(name)).observe { value in
      observer.last.withLock { $0 = value }
      log.log(
        HistoryEvent(
          event: "observed", worker: index, thread: thread, suite: suite, keys: [name], values: [value],
          time: monotonicNow(), observer: observer.id, quiet: quiet ? true : nil))
      work.handle()
      observer.changed.signal()
    }
    observer.token.withLock { $0 = token }
    return observer
  }
}

func runWorker(planPath: String, index: Int) -> Never {
  guard let data = FileManager.default.contents(atPath: planPath),
    let plan = try? JSONDecoder().decode(HistoryPlan.self, from: data)
  else { exit(64) }
  // A group of its own (Foundation's `Process` already starts it so; this holds however it was started): the
  // driver's kill then takes the tools this worker starts (``runProgram``, which keeps them in this group) with it.
  setpgid(0, 0)
  let worker = HistoryWorker(
    index: index, folder: ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? "", seed: plan.seed)
  // `HISTORY_TRACE=1`: each save's trace in the log (see `HISTORY_DUMP`), for reading a failure.
  if ProcessInfo.processInfo.environment["HISTORY_TRACE"] != nil {
    DefaultsStore.traceSaves { line in
      worker.log.log(HistoryEvent(event: "trace", worker: index, time: monotonicNow(), message: line))
    }
  }
  let isPlainWriter = index == plan.workers.count
  let threads = (isPlainWriter ? [plan.plainWriter] : plan.workers[index]).enumerated().map {
    WorkerThread(worker: worker, number: $0.offset, lines: $0.element)
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
  worker.handlerWrites.close()
  // Writes stop: stores released with writes unsaved save in the background; then every suite this process wrote
  // saves (logged as flushes, which acknowledge what they save), on a thread numbered after the plan's. The suites of
  // quiet observers are left alone: nothing of this process may tell those observers what changed.
  DefaultsStore.saveEverything()
  let closing = threads.count
  let quietSuites = Set(threads.flatMap { $0.observers.filter(\.isQuiet).map(\.suite) })
  var stores: [String: DefaultsStore] = [:]
  for thread in threads {
    for (_, operation) in thread.operations {
      switch operation {
      case .write(let suite, _), .remove(let suite, _), .update(let suite, _), .edit(let suite, _),
        .plainSet(let suite, _), .plainRemove(let suite, _):
        if !quietSuites.contains(suite) { stores[suite] = stores[suite] ?? worker.open(suite) }
      default: break
      }
    }
    // Observers' handlers write their suites too.
    for observer in thread.observers where !observer.isQuiet {
      stores[observer.suite] = stores[observer.suite] ?? worker.open(observer.suite)
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
