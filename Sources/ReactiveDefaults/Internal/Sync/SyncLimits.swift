/// The pushes a remote's limits refuse, decided before the push (so nothing is silently dropped by the remote).
enum SyncLimits {
  /// For each refused key, why: a key longer than the remote takes, a value larger than one value may be, or a push
  /// that would take the remote past its key count or its total size (the keys are taken in their sorted order while
  /// they fit; a key the remote already holds does not add to the count).
  static func refusals(
    _ pushes: [String: PropertyListValue], remote entries: @autoclosure () -> [String: PropertyListValue],
    limits: DefaultsRemoteLimits
  ) -> [String: String] {
    // A remote without limits (a synced folder) refuses nothing: its entries are not even looked at.
    guard limits != .unlimited else { return [:] }
    let remote = entries()
    var refused: [String: String] = [:]
    var count = remote.count
    var total = remote.reduce(0) { $0 + size($1.key, $1.value) }
    for (key, entry) in pushes.sorted(by: { $0.key < $1.key }) {
      let bytes = size(key, entry)
      if let most = limits.keyBytes, key.utf8.count > most {
        refused[key] = "its name is \(key.utf8.count) bytes long in UTF-8; the remote takes names of \(most) at most"
        continue
      }
      if let most = limits.valueBytes, bytes > most {
        refused[key] = "its value takes about \(bytes) bytes; the remote takes \(most) at most for one value"
        continue
      }
      let old = remote[key].map { size(key, $0) }
      if let most = limits.keys, old == nil, count + 1 > most {
        refused[key] = "the remote holds \(count) keys, its most"
        continue
      }
      let newTotal = total - (old ?? 0) + bytes
      if let most = limits.totalBytes, newTotal > most {
        refused[key] = "the remote's values would take about \(newTotal) bytes together; it takes \(most) at most"
        continue
      }
      if old == nil { count += 1 }
      total = newTotal
    }
    return refused
  }

  /// About what the entry takes in a binary property list.
  static func size(_ key: String, _ entry: PropertyListValue) -> Int {
    DomainSizeBudget.size(of: PropertyListKey(key), entry)
  }
}
