/// The work one run of a sync takes on (``SyncEngine``).
struct SyncBatch {
  var keys: [PropertyListKey]
  /// Keys whose store value changed, to look at without reading the remote.
  var changed: Set<PropertyListKey>
  /// Keys to look at with the remote (nil: none; empty: every key).
  var pull: Set<PropertyListKey>?
  var accountChanged: Bool
}

/// What a run decides, from the sync's state and the store's own values: a function of values, which the engine
/// computes inside its edit of the store (and once before it, to see whether an edit is needed at all).
struct SyncDecision {
  var state: SyncState
  /// Pulled values to write to the store.
  var writes: [(key: String, write: StorageWrite)] = []
  var pushes: [PropertyListKey: SyncEntry] = [:]

  /// Stamps the batch's local writes at `time` and applies the winning remote entries to `state`.
  init(
    _ batch: SyncBatch, state: SyncState, own: [PropertyListKey: PropertyListValue], withRemote: [PropertyListKey],
    remoteEntries: [String: PropertyListValue]?, time: Int64
  ) {
    self.state = state
    if batch.accountChanged {
      self.state.resetForNewAccount(current: Dictionary(uniqueKeysWithValues: batch.keys.map { ($0, own[$0]) }))
    }
    for key in batch.keys where batch.changed.contains(key) && !withRemote.contains(key) {
      let outcome = self.state.reconcile(key, current: own[key], remote: nil, remoteKnown: false, now: time)
      if let push = outcome.push { pushes[key] = push }
    }
    for key in withRemote {
      let entry = remoteEntries?[key.string].flatMap(SyncEntry.init)
      let outcome = self.state.reconcile(key, current: own[key], remote: entry, remoteKnown: true, now: time)
      if let write = outcome.write { writes.append((key.string, write.map(StorageWrite.set) ?? .remove)) }
      if let push = outcome.push { pushes[key] = push }
    }
  }
}
