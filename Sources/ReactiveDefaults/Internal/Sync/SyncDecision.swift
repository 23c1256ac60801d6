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
  /// Remote entries refused: their stamps no honest clock makes (``SyncStamp/dishonesty(now:)``), or their values do
  /// not decode as their keys' types (an older or newer app version's, another program's). Each key of them
  /// was looked at as if the remote had not been read: a local write is stamped and pushed, and nothing is pulled;
  /// the clock sees the stamp of a value refused for its type only.
  var refusals: [PropertyListKey: SyncRefusal] = [:]

  /// Stamps the batch's local writes at `time` and applies the winning remote entries to `state`; `decodes` tells
  /// whether a value decodes as its key's type. `refusedForValue` holds the stamps of entries the remote itself left
  /// out for their values (a synced folder's, which hands out the newest entry that decodes): the clock sees them, as
  /// it sees the stamp of a value refused here.
  init(
    _ batch: SyncBatch, state: SyncState, own: [PropertyListKey: PropertyListValue], withRemote: [PropertyListKey],
    remoteEntries: [String: PropertyListValue]?, time: Int64,
    decodes: (PropertyListKey, PropertyListValue) -> Bool = { _, _ in true },
    refusedForValue: [PropertyListKey: SyncStamp] = [:]
  ) {
    self.state = state
    self.state.repair(now: time)
    if batch.accountChanged {
      self.state.resetForNewAccount(current: Dictionary(uniqueKeysWithValues: batch.keys.map { ($0, own[$0]) }))
    }
    for key in batch.keys where batch.changed.contains(key) && !withRemote.contains(key) {
      let outcome = self.state.reconcile(key, current: own[key], remote: nil, remoteKnown: false, now: time)
      if let push = outcome.push { pushes[key] = push }
    }
    for key in withRemote {
      if let stamp = refusedForValue[key] { self.state.see(refused: stamp, now: time) }
      let entry = remoteEntries?[key.string].flatMap(SyncEntry.init)
      if let entry, let reason = Self.refusal(of: entry, key: key, now: time, decodes: decodes) {
        refusals[key] = SyncRefusal(key: key, device: entry.stamp.device, reason: reason)
        // A value refused for its type has an honest stamp: seen, so that this device's next write outranks it
        // (else, in a synced folder, the refused entry would stay the newest, and the devices would differ).
        if entry.stamp.dishonesty(now: time) == nil { self.state.see(refused: entry.stamp, now: time) }
        let outcome = self.state.reconcile(key, current: own[key], remote: nil, remoteKnown: false, now: time)
        if let push = outcome.push { pushes[key] = push }
        continue
      }
      let outcome = self.state.reconcile(key, current: own[key], remote: entry, remoteKnown: true, now: time)
      if let write = outcome.write { writes.append((key.string, write.map(StorageWrite.set) ?? .remove)) }
      if let push = outcome.push { pushes[key] = push }
    }
  }
}

extension SyncState {
  /// The clock sees the honest stamp of an entry refused for its value (so that this device's next write of the key
  /// outranks it, and wins on the devices that took it too), within what it takes in.
  fileprivate mutating func see(refused stamp: SyncStamp, now: Int64) {
    if SyncClock.takesIn(stamp, now: now) { clock.see(stamp) }
  }
}

extension SyncDecision {
  /// Why a remote entry of `key` is refused (nil: it is not): its stamp, judged at `now`, or its value.
  static func refusal(
    of entry: SyncEntry, key: PropertyListKey, now: Int64, decodes: (PropertyListKey, PropertyListValue) -> Bool
  ) -> String? {
    if let reason = entry.stamp.dishonesty(now: now) { return reason }
    if let value = entry.value, !decodes(key, value) { return undecodable }
    return nil
  }

  /// Why an entry whose value does not decode as its key's type is refused.
  static let undecodable =
    "its value does not decode as the key's type (an app version with other values, or another program)"
}

/// A remote entry the sync refused, and why.
struct SyncRefusal: Hashable, Sendable {
  var key: PropertyListKey
  /// The device the entry names as its writer.
  var device: String
  var reason: String

  var problem: DefaultsError {
    .syncRefused(key: key.string, reason: "the entry of device \(device) is refused: \(reason)")
  }
}
