import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Sets `key` in the property list at `path` as a program that takes no lock does: read, change, write a new file,
/// rename it over the old one.
private func replaceWithoutLock(_ path: String, key: String, value: Int) -> Bool {
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

/// One thread of a worker: its stores, observers and side targets, used by that thread alone (and read by the
/// worker's main thread once it has finished).
final class WorkerThread: @unchecked Sendable {  // one thread at a time: its own, then the joining main thread
  let worker: HistoryWorker
  let number: Int
  /// The thread's plan lines, each parsed once, with its position in the plan (the log's `index` and the kills'
  /// `afterOperation` count plan lines, unparseable ones included). Unparseable lines are dropped.
  let operations: [(position: Int, operation: WorkerOperation)]
  var stores: [String: DefaultsStore] = [:]
  var observers: [HistoryObserver] = []
  var sides: [String: (store: DefaultsStore, token: DefaultsObservation)] = [:]
  /// The thread's plain `UserDefaults` instances, by suite label (``WorkerOperation/plainSet(_:key:)``).
  private var plainDefaults: [String: UserDefaults] = [:]

  init(worker: HistoryWorker, number: Int, lines: [String]) {
    self.worker = worker
    self.number = number
    self.operations = lines.enumerated().compactMap { line in
      WorkerOperation(line.element).map { (position: line.offset, operation: $0) }
    }
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
    for (position, operation) in operations {
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
      case .plainSet(_, let name), .plainRemove(_, let name):
        let value: Int? = if case .plainSet = operation { values[0] } else { nil }
        if isFileStore(suite) {
          // A file store has no `UserDefaults`: another store of the same file, made for the one write.
          let other = worker.open(suite)
          if let value { other[key(name)] = value } else { other.reset(key(name)) }
        } else {
          // A new instance every other time, else the thread's own: any instance over the suite is the suite.
          let kept = position.isMultiple(of: 2) ? plainDefaults[suite] : nil
          let write = { () -> UserDefaults in
            let defaults = kept ?? UserDefaults(suiteName: HistoryPlan.suiteName(suite))!
            if let value { defaults.set(value, forKey: name) } else { defaults.removeObject(forKey: name) }
            return defaults
          }
          // Taking the library's turn at corelibs' preferences (making the instance too): two threads calling
          // corelibs at once can send either call to a stray copy of the suite (corelibs' own race, not the
          // library's: Gotchas), and this checker judges the library.
          plainDefaults[suite] = historySerializesPlainCalls ? DefaultsStore.withPreferencesTurn(write) : write()
        }
      }
      worker.log.log(
        HistoryEvent(
          event: "done", worker: worker.index, thread: number, index: position, operation: name, suite: suite,
          keys: keys, values: readValues ?? values, reads: innerReads, ok: ok, time: monotonicNow(), message: failure))
      if case .quiet = operation { return }
    }
  }
}
