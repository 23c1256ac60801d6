import HistoryChecker

/// A smaller plan that still fails: chunks of operations removed, thread by thread, while some run of it still finds
/// an anomaly.
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
  var chunk = max(1, (current.workers.flatMap { $0.map(\.count) }.max() ?? 1) / 2)
  while chunk >= 1 && runs < budget {
    var changed = false
    for worker in current.workers.indices {
      for thread in current.workers[worker].indices {
        var start = 0
        while start < current.workers[worker][thread].count && runs < budget {
          var candidate = current
          let end = min(start + chunk, candidate.workers[worker][thread].count)
          candidate.workers[worker][thread].removeSubrange(start..<end)
          candidate.kills = candidate.kills.compactMap { kill in
            guard kill.worker == worker, kill.thread == thread else { return kill }
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
    }
    if !changed { chunk /= 2 }
  }
  return current
}
