extension History {
  /// One process, one truth: a read in a worker's process that began after a write of that process returned (through
  /// the library or plain `UserDefaults`, on any thread) returns that write's value or a later one; and no
  /// transaction overwrites a write of the library's in its process that it did not see (an `update` whose body read
  /// the value from before a write that ran while it did, and whose value is read after both, lost that write).
  ///
  /// A value is older than such a write `x` when every write that could have made it is: one of the same process
  /// that returned before `x` began, or that is a transaction around `x` that read a value older than `x`; one of
  /// another process (or a tool) that reached the file before `x` began.
  func processesReadTheirOwnWrites() -> [HistoryChecker.Anomaly] {
    var found: [HistoryChecker.Anomaly] = []
    // Not the plain writer's suite: that process rewrites the file without the lock, and a store may lose to it.
    for read in localReads where read.slot.suite != "P" {
      let floor = (localWrites[read.worker] ?? []).filter { $0.slot == read.slot }.map { sources[$0.slot]![$0.index] }
      for write in floor where write.returned < read.began && write.value != read.value {
        guard isOlder(read.value, in: read.slot, than: write, worker: read.worker) else { continue }
        found.append(
          .init(
            rule: "one process, one truth",
            detail:
              "\(read.label) read \(read.value == -1 ? "absent" : "\(read.value)") after \(write.label) of the same "
              + "process had returned \(write.value == -1 ? "a removal" : "\(write.value)")"))
        break
      }
    }
    return found
  }

  /// Whether every write that could have made `value` comes before `write` in the process of `worker`.
  private func isOlder(_ value: Int, in slot: Slot, than write: Source, worker: Int) -> Bool {
    (sources[slot] ?? []).filter { $0.value == value }.allSatisfy { source in
      if precedes(source, write, worker: worker) { return true }
      // A transaction of the same process that ran around `write` and read a value from before it: `write` came
      // after the transaction's read, so after its write too (a transaction is atomic). Not a plain `UserDefaults`
      // write: no transaction can make it wait, and the Transactions article documents that window.
      guard source.worker == worker, !write.throughPlainDefaults, let seen = source.transactionRead,
        source.invocation < write.invocation, write.returned < source.returned
      else { return false }
      return (sources[slot] ?? []).filter { $0.value == seen }.allSatisfy { precedes($0, write, worker: worker) }
    }
  }

  /// Whether `source` is over before `write` began: returned before it, in the same process; in the file before it,
  /// from elsewhere (for a plain `UserDefaults` write, a visibility bound before it: such a write goes into corelibs'
  /// copy as it stands, which the library brings up to date with another process's save within the bound; a removal
  /// of a key the older copy lacks is lost, as with plain corelibs, and Gotchas says so).
  private func precedes(_ source: Source, _ write: Source, worker: Int) -> Bool {
    if source.worker == worker { return source.returned < write.invocation }
    let lag = write.throughPlainDefaults ? bound : 0
    return source.savedBy < write.invocation && write.invocation - source.savedBy > lag
  }
}
