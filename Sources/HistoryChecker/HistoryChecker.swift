// Checks one multi-process history against the library's contract across processes ("Across processes" article):
// reads follow the file, nothing acknowledged is lost, per-key order, observers converge (quiet ones included).
//
// Every write stores a value no other write stores, so each value read names the write that made it (or, for an
// absent key, the removals, suite deletions and the initial state that could have). For each write the log gives
// when it began (`invocation`) and the latest moment it can have reached the file (`savedBy`): its acknowledgement
// (a `save()`, `edit` or `update` of its process, on any thread, that began after the write returned, or the tool
// process that made it), else the kill of its process (a save cut short is completed from its journal before any
// later save), else never. A write is *durable* once acknowledged.
//
// Value `a` is *older* than a durable write `d` when every write that could have made `a` reached the file before
// `d` even began: `d`'s save then replaced it, and nothing brings it back. The rules:
// - no read, observer or file holds a value nobody wrote;
// - a read that began more than `bound` after `d` was acknowledged (or after a `refresh()` of its process, on any
//   thread, that began after that and ended before the read began) returns no value older than `d`; a read inside
//   `edit`/`update` returns none older than any `d` acknowledged before the transaction began;
// - no thread reads, and no observer is told, a value older than one it read or was told before;
// - the file, once every process stopped, holds no value older than a durable write of its key;
// - once writes stop, every observer's last value is the file's (within the settle time, and at once after
//   `refresh()`), and so is every read after `refresh()`: quiet observers too, whose process never read, refreshed
//   or saved their suite;
// - in a worker's process, a read that began after a write of that process returned (through the library or plain
//   `UserDefaults`, any thread) returns no value older than it, and no transaction overwrites a write that ran
//   inside it unseen (History+InProcess.swift);
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

  /// Checks `events` (every worker's log and the driver's `killed` events) against `final` (each suite's file once
  /// every process stopped: key → value, absent keys left out).
  package func check(_ events: [HistoryEvent], final: [String: [String: Int]]) -> [Anomaly] {
    var history = History(events: events, final: final, bound: bound)
    for (worker, log) in history.logs { history.record(worker: worker, log: log) }
    return history.anomalies + history.readsFollowTheFile() + history.sequencesKeepTheirOrder()
      + history.filesKeepAcknowledgedWrites() + history.processesReadTheirOwnWrites()
  }
}
