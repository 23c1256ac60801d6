/// What the events say, gathered once: the sources of every value, the reads to judge, the sequences each thread and
/// observer saw, and the anomalies found on the way.
struct History {
  /// One cell of a suite: what a value names.
  struct Slot: Hashable {
    var suite: String
    var key: String
  }

  /// A write that may have made a value.
  struct Source {
    var value: Int
    var invocation: UInt64
    var savedBy: UInt64
    var acknowledged: UInt64?
    var label: String
    /// The worker whose process made the write through its own preferences (the library, or plain `UserDefaults`),
    /// and when the write returned (`.max`: it was not seen to); nil for the tools, the plain writer process,
    /// unlinks and the initial state (``History/processesReadTheirOwnWrites()``).
    var worker: Int? = nil
    var returned: UInt64 = .max
    /// A transaction's write: the value it read of the slot before writing.
    var transactionRead: Int? = nil
    /// Made through a plain `UserDefaults` instance (`pset`, `premove`), which no transaction of the library waits
    /// for (the Transactions article's documented window).
    var throughPlainDefaults = false
  }

  /// A value read, and the saves it must not be older than.
  struct Read {
    var slot: Slot
    var value: Int
    /// Saves acknowledged before this moment must be seen.
    var horizon: UInt64
    var label: String
  }

  /// An operation of a worker's thread: its `begin` event and its `done` event, if it finished.
  struct Operation {
    var begin: HistoryEvent
    var done: HistoryEvent?
    var name: String { begin.operation ?? "" }
    var suite: String { begin.suite ?? "" }
    var keys: [String] { begin.keys ?? [] }
    var succeeded: Bool { done?.ok ?? false }
    var label: String {
      "worker \(begin.worker) thread \(begin.thread ?? 0) operation \(begin.index ?? -1) (\(name) \(suite) "
        + "\(keys.joined(separator: " ")))"
    }
  }

  let final: [String: [String: Int]]
  let bound: UInt64
  let suites: Set<String>
  let killTimes: [Int: UInt64]
  /// Each worker's events, by worker.
  let logs: [(Int, [HistoryEvent])]
  var sources: [Slot: [Source]] = [:]
  var reads: [Read] = []
  var sequences: [String: [(slot: Slot, value: Int)]] = [:]
  var anomalies: [HistoryChecker.Anomaly] = []
  /// Each worker's writes through its own preferences (slot, and the source's index there), and its reads (plain
  /// reads, transactions' reads, reads after `refresh()`), for ``processesReadTheirOwnWrites()``.
  var localWrites: [Int: [(slot: Slot, index: Int)]] = [:]
  var localReads: [(worker: Int, slot: Slot, value: Int, began: UInt64, label: String)] = []

  init(events: [HistoryEvent], final: [String: [String: Int]], bound: UInt64) {
    self.final = final
    self.bound = bound
    suites = Set(events.compactMap(\.suite).filter { !HistoryPlan.isSideTarget($0) }).union(final.keys)
    killTimes = Dictionary(events.filter { $0.event == "killed" }.map { ($0.worker, $0.time) }, uniquingKeysWith: min)
    var byWorker: [Int: [HistoryEvent]] = [:]
    for event in events where event.event != "killed" { byWorker[event.worker, default: []].append(event) }
    logs = byWorker.sorted { $0.key < $1.key }
    for suite in suites {
      for slot in Self.slots(of: suite) {
        sources[slot] = [Source(value: -1, invocation: 0, savedBy: 0, acknowledged: nil, label: "the initial state")]
      }
    }
  }

  static func slots(of suite: String) -> [Slot] { HistoryPlan.keys.map { Slot(suite: suite, key: $0) } }

  /// A worker's operations (each thread's, matched begin to done) in the order they began.
  private static func operations(in log: [HistoryEvent]) -> [Operation] {
    var done: [[Int]: HistoryEvent] = [:]
    for event in log where event.event == "done" {
      if let index = event.index { done[[event.thread ?? 0, index]] = event }
    }
    return log.filter { $0.event == "begin" && $0.index != nil && $0.operation != nil && $0.suite != nil }
      .sorted { $0.time < $1.time }
      .map { Operation(begin: $0, done: done[[$0.thread ?? 0, $0.index!]]) }
  }

  private mutating func add(_ slot: Slot, _ source: Source) -> Int {
    sources[slot, default: []].append(source)
    return sources[slot]!.count - 1
  }

  /// Records one worker's writes, acknowledgements, reads and deliveries.
  mutating func record(worker: Int, log: [HistoryEvent]) {
    let end = killTimes[worker] ?? .max
    let operations = Self.operations(in: log)
    // A plain write (`write`, `remove`) of this process and when it returned: a save of its suite that begins after
    // that acknowledges it; one that began earlier may or may not have taken it.
    var unacknowledged: [(slot: Slot, index: Int, returned: UInt64)] = []
    var refreshes: [(suite: String, began: UInt64, ended: UInt64)] = []
    for operation in operations {
      if let done = operation.done, !operation.succeeded, ["flush", "update", "edit"].contains(operation.name) {
        anomalies.append(
          .init(
            rule: "saves succeed",
            detail: "\(operation.label) failed: \(done.message ?? "?")"))
      }
      let values = operation.begin.values ?? []
      let suite = operation.suite
      switch operation.name {
      case "write", "remove", "pset", "premove":
        let slot = Slot(suite: suite, key: operation.keys[0])
        let index = add(
          slot,
          Source(
            value: values[0], invocation: operation.begin.time, savedBy: end, label: operation.label, worker: worker,
            returned: operation.done?.time ?? .max, throughPlainDefaults: operation.name.hasPrefix("p")))
        unacknowledged.append((slot, index, operation.done?.time ?? end))
        localWrites[worker, default: []].append((slot, index))
      case "update", "edit":
        let finished = operation.done
        let innerReads = operation.succeeded ? finished?.reads ?? [] : []
        for (offset, (key, value)) in zip(operation.keys, values).enumerated() {
          // A failed transaction wrote nothing, unless it failed after committing: never durable, maybe saved.
          let savedBy: UInt64 = operation.succeeded ? finished!.time : (finished == nil ? end : .max)
          let slot = Slot(suite: suite, key: key)
          let index = add(
            slot,
            Source(
              value: value, invocation: operation.begin.time, savedBy: savedBy,
              acknowledged: operation.succeeded ? finished!.time : nil, label: operation.label, worker: worker,
              returned: operation.succeeded ? finished!.time : .max,
              transactionRead: offset < innerReads.count ? innerReads[offset] : nil))
          if operation.succeeded { localWrites[worker, default: []].append((slot, index)) }
        }
        for (key, value) in zip(operation.keys, innerReads) {
          let slot = Slot(suite: suite, key: key)
          reads.append(Read(slot: slot, value: value, horizon: operation.begin.time, label: operation.label))
          localReads.append((worker, slot, value, operation.begin.time, operation.label))
        }
      case "toolwrite", "toolimport", "tooldelete", "unlink", "plain":
        let everyKey = operation.name == "tooldelete" || operation.name == "unlink"
        let affected = everyKey ? HistoryPlan.keys : operation.keys
        let written = everyKey ? affected.map { _ in -1 } : values
        // A tool process whose parent was killed may still finish; an unlink or a plain writer takes no lock and
        // is never durable.
        let durable = operation.succeeded && operation.name.hasPrefix("tool")
        for (key, value) in zip(affected, written) {
          _ = add(
            Slot(suite: suite, key: key),
            Source(
              value: value, invocation: operation.begin.time,
              savedBy: operation.succeeded ? operation.done!.time : .max,
              acknowledged: durable ? operation.done!.time : nil, label: operation.label))
        }
      case "refresh":
        if let done = operation.done { refreshes.append((suite, operation.begin.time, done.time)) }
      case "read":
        guard let done = operation.done, let value = done.values?.first else { continue }
        var horizon = operation.begin.time > bound ? operation.begin.time - bound : 0
        for refresh in refreshes where refresh.suite == suite && refresh.ended <= operation.begin.time {
          horizon = max(horizon, refresh.began)
        }
        let slot = Slot(suite: suite, key: operation.keys[0])
        reads.append(Read(slot: slot, value: value, horizon: horizon, label: operation.label))
        localReads.append((worker, slot, value, operation.begin.time, operation.label))
        sequences[
          "worker \(worker) thread \(operation.begin.thread ?? 0) reads of \(suite) \(operation.keys[0])",
          default: []
        ].append((slot, value))
      default:
        break
      }
    }
    acknowledge(&unacknowledged, by: operations)
    recordDeliveries(worker: worker, log: log)
  }

  /// Acknowledges each plain write by the first successful save of its suite in its process (`flush`, `update`,
  /// `edit`, on any thread) that began after the write returned.
  private mutating func acknowledge(
    _ writes: inout [(slot: Slot, index: Int, returned: UInt64)], by operations: [Operation]
  ) {
    let saves = operations.filter { ["flush", "update", "edit"].contains($0.name) && $0.succeeded }
      .sorted { $0.done!.time < $1.done!.time }
    for save in saves {
      writes.removeAll { write in
        guard write.slot.suite == save.suite, write.returned < save.begin.time else { return false }
        sources[write.slot]![write.index].savedBy = save.done!.time
        sources[write.slot]![write.index].acknowledged = save.done!.time
        return true
      }
    }
  }

  /// Records what the worker's observers were told, its issues, and the values its observers and reads ended with.
  private mutating func recordDeliveries(worker: Int, log: [HistoryEvent]) {
    for event in log {
      switch event.event {
      case "observed":
        guard let suite = event.suite, let key = event.keys?.first, let value = event.values?.first else { continue }
        sequences["worker \(worker) observer \(event.observer ?? -1) of \(suite) \(key)", default: []].append(
          (Slot(suite: suite, key: key), value))
      // The plain writer rewrites its suite in place with no lock, so a store of that suite can find the file cut
      // and say so: an issue there is the plain writer's, as with plain corelibs.
      case "issue" where event.suite != "P":
        anomalies.append(.init(rule: "issue reported", detail: "worker \(worker): \(event.message ?? "?")"))
      case "converged", "refreshed", "final":
        guard let suite = event.suite, let key = event.keys?.first, let value = event.values?.first else { continue }
        if event.event == "final" {
          localReads.append(
            (
              worker, Slot(suite: suite, key: key), value, event.time,
              "worker \(worker)'s read of \(suite) \(key) after refresh()"
            ))
        }
        let expected = final[suite]?[key] ?? -1
        guard value != expected else { continue }
        let observer = "\(event.quiet == true ? "quiet observer" : "observer") \(event.observer ?? -1)"
        let what =
          switch event.event {
          case "converged": "\(observer) once writes stopped"
          case "refreshed": "\(observer) after refresh()"
          default: "read after refresh()"
          }
        anomalies.append(
          .init(
            rule: "observers converge",
            detail: "worker \(worker) \(what): \(suite) \(key) is \(value), the file holds \(expected)"))
      default:
        break
      }
    }
  }
}
