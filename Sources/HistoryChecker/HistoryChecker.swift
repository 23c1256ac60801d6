// Checks one multi-process history against the library's contract across processes ("Across processes" article):
// reads follow the file, nothing acknowledged is lost, per-key order, observers converge.
//
// Every write stores a value no other write stores, so each value read names the write that made it (or, for an
// absent key, the removals, suite deletions and the initial state that could have). For each write the log gives
// when it began (`invocation`) and the latest moment it can have reached the file (`savedBy`): its acknowledgement
// (a completed `save()`, `edit`, `update` or tool process), else the kill of its process (a save cut short is
// completed from its journal before any later save), else never. A write is *durable* once acknowledged.
//
// Value `a` is *older* than a durable write `d` when every write that could have made `a` reached the file before
// `d` even began: `d`'s save then replaced it, and nothing brings it back. The rules:
// - no read, observer or file holds a value nobody wrote;
// - a read that began more than `bound` after `d` was acknowledged (or after a `refresh()` of its process that began
//   after that) returns no value older than `d`; a read inside `edit`/`update` returns none older than any `d`
//   acknowledged before the transaction began;
// - no process reads, and no observer is told, a value older than one it read or was told before;
// - the file, once every process stopped, holds no value older than a durable write of its key;
// - once writes stop, every observer's last value is the file's (within the settle time, and at once after
//   `refresh()`), and so is every read after `refresh()`;
// - no store reports an issue (a torn or unreadable file, a failed save, a type mismatch), except a store of the
//   plain writer's suite, which that writer rewrites in place.
// A plain `UserDefaults` writer takes no lock and may lose other writers' values, as corelibs does: its suite is
// written by nothing else, its writes are never durable, and only invention and convergence are checked there.

/// The verdict on one history.
package struct HistoryChecker: Sendable {
  /// Something that contradicts the contract.
  package struct Anomaly: Sendable, CustomStringConvertible, Equatable {
    package var rule: String
    package var detail: String
    package var description: String { "\(rule): \(detail)" }

    package init(rule: String, detail: String) {
      self.rule = rule
      self.detail = detail
    }
  }

  /// How long after a save's acknowledgement every process must read it.
  package var bound: UInt64

  package init(boundNanoseconds: UInt64) { bound = boundNanoseconds }

  private struct Slot: Hashable {
    var suite: String
    var key: String
  }

  private struct Source {
    var value: Int
    var invocation: UInt64
    var savedBy: UInt64
    var acknowledged: UInt64?
    var label: String
  }

  private struct Read {
    var slot: Slot
    var value: Int
    /// Saves acknowledged before this moment must be seen.
    var horizon: UInt64
    var label: String
  }

  /// Checks `events` (every worker's log and the driver's `killed` events) against `final` (each suite's file once
  /// every process stopped: key → value, absent keys left out).
  package func check(_ events: [HistoryEvent], final: [String: [String: Int]]) -> [Anomaly] {
    var anomalies: [Anomaly] = []
    var sources: [Slot: [Source]] = [:]
    var reads: [Read] = []
    var sequences: [String: [(slot: Slot, value: Int)]] = [:]
    let slotsOfSuite: (String) -> [Slot] = { suite in HistoryPlan.keys.map { Slot(suite: suite, key: $0) } }
    let suites = Set(events.compactMap(\.suite)).union(final.keys)
    for suite in suites {
      for slot in slotsOfSuite(suite) {
        sources[slot] = [Source(value: -1, invocation: 0, savedBy: 0, acknowledged: nil, label: "the initial state")]
      }
    }
    let killTimes = Dictionary(
      events.filter { $0.event == "killed" }.map { ($0.worker, $0.time) }, uniquingKeysWith: min)
    var byWorker: [Int: [HistoryEvent]] = [:]
    for event in events where event.event != "killed" { byWorker[event.worker, default: []].append(event) }

    for (worker, log) in byWorker.sorted(by: { $0.key < $1.key }) {
      let end = killTimes[worker] ?? .max
      var done: [Int: HistoryEvent] = [:]
      for event in log where event.event == "done" { if let index = event.index { done[index] = event } }
      var pending: [String: [(slot: Slot, index: Int)]] = [:]
      var refreshed: [String: (began: UInt64, ended: UInt64)] = [:]
      func add(_ slot: Slot, _ source: Source) -> Int {
        sources[slot, default: []].append(source)
        return sources[slot]!.count - 1
      }
      func acknowledge(_ suite: String, at time: UInt64) {
        for (slot, index) in pending[suite] ?? [] {
          sources[slot]![index].savedBy = time
          sources[slot]![index].acknowledged = time
        }
        pending[suite] = []
      }
      for begin in log where begin.event == "begin" {
        guard let index = begin.index, let operation = begin.operation, let suite = begin.suite else { continue }
        let finished = done[index]
        let succeeded = finished?.ok ?? false
        if let finished, !succeeded, ["flush", "update", "edit"].contains(operation) {
          anomalies.append(
            Anomaly(
              rule: "saves succeed",
              detail: "worker \(worker) operation \(index) (\(operation) \(suite)) failed: \(finished.message ?? "?")"))
        }
        let label =
          "worker \(worker) operation \(index) (\(operation) \(suite) \((begin.keys ?? []).joined(separator: " ")))"
        let keys = begin.keys ?? []
        let values = begin.values ?? []
        switch operation {
        case "write", "remove":
          let slot = Slot(suite: suite, key: keys[0])
          let source = Source(value: values[0], invocation: begin.time, savedBy: end, acknowledged: nil, label: label)
          pending[suite, default: []].append((slot, add(slot, source)))
        case "flush":
          if succeeded, let finished { acknowledge(suite, at: finished.time) }
        case "update", "edit":
          if succeeded, let finished { acknowledge(suite, at: finished.time) }
          for (key, value) in zip(keys, values) {
            let slot = Slot(suite: suite, key: key)
            // A failed transaction wrote nothing, unless it failed after committing: never durable, maybe saved.
            let savedBy: UInt64 = succeeded ? finished!.time : (finished == nil ? end : .max)
            _ = add(
              slot,
              Source(
                value: value, invocation: begin.time, savedBy: savedBy,
                acknowledged: succeeded ? finished!.time : nil, label: label))
          }
          for (key, value) in zip(keys, succeeded ? finished?.reads ?? [] : []) {
            reads.append(Read(slot: Slot(suite: suite, key: key), value: value, horizon: begin.time, label: label))
          }
        case "toolwrite", "toolimport", "tooldelete", "unlink", "plain":
          let affected = operation == "tooldelete" || operation == "unlink" ? HistoryPlan.keys : keys
          let written = operation == "tooldelete" || operation == "unlink" ? affected.map { _ in -1 } : values
          // A tool process whose parent was killed may still finish; an unlink or a plain writer takes no lock and
          // is never durable.
          let durable = succeeded && (operation.hasPrefix("tool"))
          for (key, value) in zip(affected, written) {
            _ = add(
              Slot(suite: suite, key: key),
              Source(
                value: value, invocation: begin.time, savedBy: succeeded ? finished!.time : .max,
                acknowledged: durable ? finished!.time : nil, label: label))
          }
        case "refresh":
          if let finished { refreshed[suite] = (begin.time, finished.time) }
        case "read":
          guard let finished, let value = finished.values?.first else { continue }
          var horizon = begin.time > bound ? begin.time - bound : 0
          if let refresh = refreshed[suite], refresh.ended <= begin.time { horizon = max(horizon, refresh.began) }
          let slot = Slot(suite: suite, key: keys[0])
          reads.append(Read(slot: slot, value: value, horizon: horizon, label: label))
          sequences["worker \(worker) reads of \(suite) \(keys[0])", default: []].append((slot, value))
        default:
          break
        }
      }
      for (_, entries) in pending {
        for (slot, index) in entries { sources[slot]![index].savedBy = end }
      }
      for event in log {
        switch event.event {
        case "observed":
          guard let suite = event.suite, let key = event.keys?.first, let value = event.values?.first else { continue }
          sequences["worker \(worker) observer \(event.observer ?? -1) of \(suite) \(key)", default: []].append(
            (Slot(suite: suite, key: key), value))
        // The plain writer rewrites its suite in place with no lock, so a store of that suite can find the file cut
        // and say so: an issue there is the plain writer's, as with plain corelibs.
        case "issue" where event.suite != "P":
          anomalies.append(Anomaly(rule: "issue reported", detail: "worker \(worker): \(event.message ?? "?")"))
        case "converged", "refreshed", "final":
          guard let suite = event.suite, let key = event.keys?.first, let value = event.values?.first else { continue }
          let expected = final[suite]?[key] ?? -1
          if value != expected {
            let what =
              event.event == "converged"
              ? "observer \(event.observer ?? -1) once writes stopped"
              : event.event == "refreshed" ? "observer \(event.observer ?? -1) after refresh()" : "read after refresh()"
            anomalies.append(
              Anomaly(
                rule: "observers converge",
                detail: "worker \(worker) \(what): \(suite) \(key) is \(value), the file holds \(expected)"))
          }
        default:
          break
        }
      }
    }

    func describe(_ value: Int) -> String { value == -1 ? "absent" : "\(value)" }
    /// Whether every write that could have made `value` reached the file before `invocation`.
    func isOlder(_ value: Int, in slot: Slot, than invocation: UInt64) -> Bool {
      (sources[slot] ?? []).filter { $0.value == value }.allSatisfy { $0.savedBy < invocation }
    }
    func hasSource(_ value: Int, _ slot: Slot) -> Bool { (sources[slot] ?? []).contains { $0.value == value } }

    for read in reads {
      guard hasSource(read.value, read.slot) else {
        anomalies.append(
          Anomaly(rule: "invented value", detail: "\(read.label) read \(read.value), which nobody wrote"))
        continue
      }
      let newer = (sources[read.slot] ?? []).filter {
        $0.value != read.value && ($0.acknowledged ?? .max) < read.horizon
      }
      if let durable = newer.first(where: { isOlder(read.value, in: read.slot, than: $0.invocation) }) {
        anomalies.append(
          Anomaly(
            rule: "reads follow the file",
            detail:
              "\(read.label) read \(describe(read.value)) after \(durable.label) saved \(describe(durable.value))"))
      }
    }
    // The plain writer's suite is rewritten in place with no lock: a reader can find it torn, so order is not
    // checked there.
    for (name, sequence) in sequences.sorted(by: { $0.key < $1.key }) where sequence.first?.slot.suite != "P" {
      for (offset, element) in sequence.enumerated()
      where element.value != -1 && !hasSource(element.value, element.slot) {
        anomalies.append(
          Anomaly(rule: "invented value", detail: "\(name) #\(offset): \(element.value), which nobody wrote"))
      }
      // The newest writer's invocation among the values seen so far: a later value older than it is a step back.
      var latestInvocation: (time: UInt64, value: Int)?
      for element in sequence {
        if let latest = latestInvocation, element.value != latest.value,
          isOlder(element.value, in: element.slot, than: latest.time)
        {
          anomalies.append(
            Anomaly(
              rule: "per-key order",
              detail: "\(name): \(describe(element.value)) after the newer \(describe(latest.value))"))
          break
        }
        let earliest = (sources[element.slot] ?? []).filter { $0.value == element.value }.map(\.invocation).min() ?? 0
        if earliest > latestInvocation?.time ?? 0 { latestInvocation = (earliest, element.value) }
      }
    }
    for suite in suites.sorted() where suite != "P" {
      for slot in slotsOfSuite(suite) {
        let value = final[suite]?[slot.key] ?? -1
        guard hasSource(value, slot) else {
          anomalies.append(Anomaly(rule: "invented value", detail: "the file holds \(suite) \(slot.key) = \(value)"))
          continue
        }
        let lost = (sources[slot] ?? []).first {
          $0.acknowledged != nil && $0.value != value && isOlder(value, in: slot, than: $0.invocation)
        }
        if let lost {
          anomalies.append(
            Anomaly(
              rule: "nothing acknowledged is lost",
              detail:
                "the file holds \(suite) \(slot.key) = \(describe(value)), older than \(describe(lost.value)) that \(lost.label) saved"
            ))
        }
      }
    }
    return anomalies
  }
}
