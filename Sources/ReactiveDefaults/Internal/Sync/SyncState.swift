import Foundation

/// A sync's own state, kept in the store under ``DefaultsSync/stateKey`` and changed only inside the store's `edit`
/// (under the suite's lock on Linux): so two processes of one app (an app and its widget over one suite) share one
/// device name, one clock and one record per key, and never stamp one write twice.
///
/// The decisions are functions of values (no store, no remote): ``SyncStateTests`` drive them as tables.
struct SyncState: Equatable, Sendable {
  /// What this device knows of one key.
  enum Record: Equatable, Sendable {
    /// Never stamped: the value the key held when the sync first saw it (nil: nothing stored). It is this device's
    /// default, a registered default or a value from before the sync, and is never pushed.
    case unstamped(PropertyListValue?)
    /// The stored value is `entry`'s, stamped by this device's write or pulled; `pending`: a write of this device
    /// the remote has not taken yet.
    case stamped(SyncEntry, pending: Bool)

    /// The value the record is about.
    var value: PropertyListValue? {
      switch self {
      case .unstamped(let value): value
      case .stamped(let entry, _): entry.value
      }
    }
  }

  var device: String
  var clock = SyncClock()
  var records: [PropertyListKey: Record] = [:]
  /// Whether the state was made or repaired since stamps from outside are bounded (stored as `b`): one saved before
  /// may hold a poisoned clock or records, and is repaired once (``repair(now:)``).
  var bounded = true

  init(device: String) {
    self.device = device
  }

  /// The longest device name, in UTF-8 bytes (the sync's own names are UUIDs: 36).
  static let maximumDeviceNameBytes = 128

  /// Whether `name` can name a device: a synced folder makes it a file name (`<device>.plist`), so it is one safe on
  /// every file system a file-sync tool carries it to: not empty, at most ``maximumDeviceNameBytes``, no path
  /// separator (`/`, `\`), no `:`, no control character, and not starting with `.` (no `..`, and no hidden file,
  /// which the folder's readers skip).
  static func isDeviceName(_ name: String) -> Bool {
    guard !name.isEmpty, name.utf8.count <= maximumDeviceNameBytes, !name.hasPrefix(".") else { return false }
    return !name.unicodeScalars.contains { scalar in
      scalar == "/" || scalar == "\\" || scalar == ":" || scalar.properties.generalCategory == .control
    }
  }

  /// What a reconcile of one key asks of the store and the remote.
  struct Outcome: Equatable {
    /// The value to write into the store (`.some(nil)`: remove the key), when a pulled entry wins.
    var write: PropertyListValue??
    /// The entry to push, when this device's write is newer than the remote's.
    var push: SyncEntry?
  }

  /// Looks at one key: stamps a write of this device not stamped yet (the stored value `current` differs from the
  /// record's), then compares with the remote's entry (nil: the remote has none; `remoteKnown` false: the remote was
  /// not read, only local writes are looked at).
  mutating func reconcile(
    _ key: PropertyListKey, current: PropertyListValue?, remote: SyncEntry?, remoteKnown: Bool, now: Int64
  ) -> Outcome {
    var outcome = Outcome()
    var record = records[key] ?? .unstamped(nil)
    if record.value != current {
      record = .stamped(SyncEntry(stamp: clock.tick(now: now, device: device), value: current), pending: true)
    }
    if remoteKnown {
      if let remote {
        if SyncClock.takesIn(remote.stamp, now: now) { clock.see(remote.stamp) }
        switch record {
        case .unstamped:
          record = .stamped(remote, pending: false)
          if remote.value != current { outcome.write = .some(remote.value) }
        case .stamped(let mine, _) where remote.outranks(mine):
          record = .stamped(remote, pending: false)
          if remote.value != current { outcome.write = .some(remote.value) }
        case .stamped(let mine, _) where remote == mine:
          record = .stamped(mine, pending: false)
        case .stamped(let mine, _):
          // Older, or one stamp with a value that ranks below this device's (``SyncEntry/outranks(_:)``): pushed, so
          // that the remote holds the entry every device picks.
          record = .stamped(mine, pending: true)
        }
      } else if case .stamped(let mine, _) = record {
        record = .stamped(mine, pending: true)
      }
    }
    if case .stamped(let mine, true) = record { outcome.push = mine }
    records[key] = record
    return outcome
  }

  /// Repairs, once, what a stamp no honest clock makes left in a state saved before such stamps were refused
  /// (``SyncStamp/dishonesty(now:)``, judged at `now`; a state marked ``bounded`` is left alone, so that a clock
  /// that later runs behind by more than a day is not taken for a poisoned state). A record another device stamped
  /// so becomes unstamped (the key keeps its value, never pushed, and any honest entry wins over it); a poisoned
  /// clock starts again from the greatest stamp left; this device's own records stamped so are stamped again and
  /// pushed. (A clock near `Int64.max` made every launch trap at its first synced write, until the state was
  /// removed by hand.)
  mutating func repair(now: Int64) {
    guard !bounded else { return }
    bounded = true
    var restamp: [PropertyListKey] = []
    for (key, record) in records {
      guard case .stamped(let entry, _) = record, entry.stamp.dishonesty(now: now) != nil else { continue }
      records[key] = .unstamped(entry.value)
      if entry.stamp.device == device { restamp.append(key) }
    }
    // Beyond what the clock takes in (half the bounds), this device's own stamps would be refused by devices whose
    // clocks lag: started again from the stamps it may take in.
    if !SyncClock.takesIn(SyncStamp(wall: clock.wall, counter: clock.counter, device: device), now: now) {
      clock = SyncClock()
      for case .stamped(let entry, _) in records.values where SyncClock.takesIn(entry.stamp, now: now) {
        clock.see(entry.stamp)
      }
    }
    for key in restamp.sorted(by: { $0.string < $1.string }) {
      let value = records[key]?.value
      records[key] = .stamped(SyncEntry(stamp: clock.tick(now: now, device: device), value: value), pending: true)
    }
  }

  /// Records the value a key holds when the sync first sees it, unstamped: it is never pushed.
  mutating func adopt(_ key: PropertyListKey, current: PropertyListValue?) {
    if records[key] == nil { records[key] = .unstamped(current) }
  }

  /// The entry was pushed: the remote holds it now (unless a newer write of this device was stamped meanwhile).
  mutating func pushed(_ key: PropertyListKey, _ entry: SyncEntry) {
    if case .stamped(let mine, true) = records[key], mine == entry { records[key] = .stamped(mine, pending: false) }
  }

  /// The account changed: every stamp is forgotten, and every key's value is this device's own again (unstamped,
  /// never pushed), so that the new account's entries win and nothing of the old account's reaches it.
  mutating func resetForNewAccount(current: [PropertyListKey: PropertyListValue?]) {
    clock = SyncClock()
    records = current.mapValues { .unstamped($0) }
  }
}

// MARK: - Stored form

extension SyncState {
  /// The state as stored: `device`, `t` and `c` (the clock), `b` (``bounded``), and `keys`: per key `v` (the value;
  /// absent: none), and either `u` (unstamped) or the stamp `t`, `c`, `d` with `p` (pending).
  var propertyListValue: PropertyListValue {
    var keys: [PropertyListKey: PropertyListValue] = [:]
    for (key, record) in records {
      switch record {
      case .unstamped(let value):
        var fields: [PropertyListKey: PropertyListValue] = ["u": .bool(true)]
        if let value { fields["v"] = value }
        keys[key] = .dictionary(fields)
      case .stamped(let entry, let pending):
        guard case .dictionary(var fields) = entry.propertyListValue else { continue }
        fields["p"] = .bool(pending)
        keys[key] = .dictionary(fields)
      }
    }
    return .dictionary([
      "device": .string(device), "t": .integer(Int128(clock.wall)), "c": .integer(Int128(clock.counter)),
      "keys": .dictionary(keys), "b": .bool(bounded),
    ])
  }

  /// The state stored, or nil when there is none or it is damaged (the sync then starts again as on a fresh install:
  /// it pushes nothing until this device writes). A device name that is no safe file name
  /// (``isDeviceName(_:)``: `../escaped` made a synced folder write outside itself) is damage too.
  init?(_ stored: PropertyListValue?) {
    guard case .dictionary(let fields)? = stored, case .string(let device)? = fields["device"],
      Self.isDeviceName(device),
      case .integer(let wall)? = fields["t"], case .integer(let counter)? = fields["c"],
      let wall = Int64(exactly: wall), let counter = Int64(exactly: counter),
      case .dictionary(let keys)? = fields["keys"]
    else { return nil }
    self.device = device
    clock = SyncClock(wall: wall, counter: counter)
    bounded = fields["b"] == .bool(true)
    for (key, value) in keys {
      guard case .dictionary(let fields) = value else { continue }
      if fields["u"] != nil {
        records[key] = .unstamped(fields["v"])
      } else if let entry = SyncEntry(value) {
        records[key] = .stamped(entry, pending: fields["p"] == .bool(true))
      }
    }
  }
}
