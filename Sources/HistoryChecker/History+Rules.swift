extension History {
  private func describe(_ value: Int) -> String { value == -1 ? "absent" : "\(value)" }

  /// Whether every write that could have made `value` reached the file before `invocation`.
  private func isOlder(_ value: Int, in slot: Slot, than invocation: UInt64) -> Bool {
    (sources[slot] ?? []).filter { $0.value == value }.allSatisfy { $0.savedBy < invocation }
  }

  /// When `write` counts as begun for the rules that judge values older than it: a plain `UserDefaults` write goes
  /// into corelibs' copy as it stands, which takes up to the visibility bound to load another process's save, so it is
  /// judged as begun that much earlier (History+InProcess.swift).
  private func begun(_ write: Source) -> UInt64 {
    write.throughPlainDefaults ? write.invocation - min(bound, write.invocation) : write.invocation
  }

  private func hasSource(_ value: Int, _ slot: Slot) -> Bool { (sources[slot] ?? []).contains { $0.value == value } }

  /// No read returns a value nobody wrote, or one older than a save acknowledged before its horizon.
  func readsFollowTheFile() -> [HistoryChecker.Anomaly] {
    var found: [HistoryChecker.Anomaly] = []
    for read in reads {
      guard hasSource(read.value, read.slot) else {
        found.append(.init(rule: "invented value", detail: "\(read.label) read \(read.value), which nobody wrote"))
        continue
      }
      let newer = (sources[read.slot] ?? []).filter {
        $0.value != read.value && ($0.acknowledged ?? .max) < read.horizon
      }
      if let durable = newer.first(where: { isOlder(read.value, in: read.slot, than: begun($0)) }) {
        found.append(
          .init(
            rule: "reads follow the file",
            detail:
              "\(read.label) read \(describe(read.value)) after \(durable.label) saved \(describe(durable.value))"))
      }
    }
    return found
  }

  /// No thread's reads and no observer's deliveries hold a value nobody wrote, or go back to an older value.
  func sequencesKeepTheirOrder() -> [HistoryChecker.Anomaly] {
    var found: [HistoryChecker.Anomaly] = []
    // The plain writer's suite is rewritten in place with no lock: a reader can find it torn, so order is not
    // checked there.
    for (name, sequence) in sequences.sorted(by: { $0.key < $1.key }) where sequence.first?.slot.suite != "P" {
      for (offset, element) in sequence.enumerated()
      where element.value != -1 && !hasSource(element.value, element.slot) {
        found.append(.init(rule: "invented value", detail: "\(name) #\(offset): \(element.value), which nobody wrote"))
      }
      // The newest writer's invocation among the values seen so far: a later value older than it is a step back.
      var latestInvocation: (time: UInt64, value: Int)?
      for element in sequence {
        if let latest = latestInvocation, element.value != latest.value,
          isOlder(element.value, in: element.slot, than: latest.time)
        {
          found.append(
            .init(
              rule: "per-key order",
              detail: "\(name): \(describe(element.value)) after the newer \(describe(latest.value))"))
          break
        }
        let earliest = (sources[element.slot] ?? []).filter { $0.value == element.value }.map(begun).min() ?? 0
        if earliest > latestInvocation?.time ?? 0 { latestInvocation = (earliest, element.value) }
      }
    }
    return found
  }

  /// Each file, once every process stopped, holds a value somebody wrote and none older than a durable write.
  func filesKeepAcknowledgedWrites() -> [HistoryChecker.Anomaly] {
    var found: [HistoryChecker.Anomaly] = []
    for suite in suites.sorted() where suite != "P" {
      for slot in Self.slots(of: suite) {
        let value = final[suite]?[slot.key] ?? -1
        guard hasSource(value, slot) else {
          found.append(.init(rule: "invented value", detail: "the file holds \(suite) \(slot.key) = \(value)"))
          continue
        }
        let lost = (sources[slot] ?? []).first {
          $0.acknowledged != nil && $0.value != value && isOlder(value, in: slot, than: begun($0))
        }
        if let lost {
          found.append(
            .init(
              rule: "nothing acknowledged is lost",
              detail:
                "the file holds \(suite) \(slot.key) = \(describe(value)), older than \(describe(lost.value)) that "
                + "\(lost.label) saved"))
        }
      }
    }
    return found
  }
}
