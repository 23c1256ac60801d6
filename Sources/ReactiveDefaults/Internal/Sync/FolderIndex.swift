/// What the device files of a synced folder hold, by file and by key, updated one file at a time: a change of one
/// device's file costs that file's parse and a few binary searches, whatever the number of devices, and a pull looks
/// at each key's greatest entries only (``SyncedFolder/pull(decoding:)``).
struct FolderIndex: Sendable {
  /// One device file's entry of a key.
  struct Candidate: Sendable {
    var entry: SyncEntry
    /// The entry as the file holds it.
    var stored: PropertyListValue
    /// The file's name, exactly as the file system spells it.
    var file: PropertyListKey

    /// Whether this candidate ranks above `other`: by entry (``SyncEntry/outranks(_:)``, a total order on
    /// entries), then by file name, so that each candidate has one place.
    func precedes(_ other: Candidate) -> Bool {
      if entry.outranks(other.entry) { return true }
      if other.entry.outranks(entry) { return false }
      return Array(file.string.utf8).lexicographicallyPrecedes(other.file.string.utf8)
    }
  }

  /// Per file, its stamp as last read and what it held then (nothing for a file that is no property list).
  private(set) var files: [PropertyListKey: (stamp: SuiteFile.Stamp, entries: [PropertyListKey: Candidate])] = [:]
  /// Per key, the candidates whose counters an honest clock can make, greatest last: a device's new write, the
  /// greatest entry of its key, goes at the end, moving nothing. (An entry more than a day ahead
  /// of this device's clock is among them: it ranks above every honest entry, and becomes one as time passes.)
  private var ranked: [PropertyListKey: [Candidate]] = [:]
  /// Per key, the candidates whose counters no clock makes (``SyncStamp/maximumCounter``): never taken, whenever it
  /// is, and reported.
  private var outOfRange: [PropertyListKey: [PropertyListKey: Candidate]] = [:]

  /// Records what the file `name` holds now: its entries at `stamp`, or nothing (nil: the file is gone).
  mutating func update(_ name: PropertyListKey, stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]?)
  {
    if let old = files.removeValue(forKey: name) {
      for (key, candidate) in old.entries { remove(candidate, forKey: key) }
    }
    guard let stamp else { return }
    var candidates: [PropertyListKey: Candidate] = [:]
    for (key, stored) in entries ?? [:] {
      guard let entry = SyncEntry(stored) else { continue }
      let candidate = Candidate(entry: entry, stored: stored, file: name)
      candidates[key] = candidate
      insert(candidate, forKey: key)
    }
    files[name] = (stamp, candidates)
  }

  /// What a file holds now: its entries at `stamp` (nil stamp: the file is gone).
  typealias Change = (name: PropertyListKey, stamp: SuiteFile.Stamp?, entries: [PropertyListKey: PropertyListValue]?)

  /// Records what several files hold now (``update(_:stamp:entries:)``, for each). Many at once (a sync's start, a
  /// folder whose files all changed) are sorted in once per key, not inserted one by one.
  mutating func update(_ changes: [Change]) {
    guard changes.count > 16 else {
      for change in changes { update(change.name, stamp: change.stamp, entries: change.entries) }
      return
    }
    let names = Set(changes.map(\.name))
    var keys = Set<PropertyListKey>()
    for name in names {
      guard let old = files.removeValue(forKey: name) else { continue }
      for (key, candidate) in old.entries {
        if Self.isInRange(candidate.entry.stamp) {
          keys.insert(key)
        } else {
          remove(candidate, forKey: key)
        }
      }
    }
    for key in keys { ranked[key]?.removeAll { names.contains($0.file) } }
    for change in changes {
      guard let stamp = change.stamp else { continue }
      var candidates: [PropertyListKey: Candidate] = [:]
      for (key, stored) in change.entries ?? [:] {
        guard let entry = SyncEntry(stored) else { continue }
        let candidate = Candidate(entry: entry, stored: stored, file: change.name)
        candidates[key] = candidate
        if Self.isInRange(entry.stamp) {
          ranked[key, default: []].append(candidate)
          keys.insert(key)
        } else {
          outOfRange[key, default: [:]][candidate.file] = candidate
        }
      }
      files[change.name] = (stamp, candidates)
    }
    for key in keys {
      ranked[key]?.sort { $1.precedes($0) }
      if ranked[key]?.isEmpty == true { ranked[key] = nil }
    }
  }

  private static func isInRange(_ stamp: SyncStamp) -> Bool {
    stamp.counter >= 0 && stamp.counter <= SyncStamp.maximumCounter
  }

  private mutating func insert(_ candidate: Candidate, forKey key: PropertyListKey) {
    guard Self.isInRange(candidate.entry.stamp) else {
      outOfRange[key, default: [:]][candidate.file] = candidate
      return
    }
    // In place: the dictionary's array is not copied (a key of 2,000 devices holds 2,000 candidates).
    let place = ranked[key].map { Self.place(of: candidate, in: $0) } ?? 0
    ranked[key, default: []].insert(candidate, at: place)
  }

  private mutating func remove(_ candidate: Candidate, forKey key: PropertyListKey) {
    guard Self.isInRange(candidate.entry.stamp) else {
      outOfRange[key]?[candidate.file] = nil
      if outOfRange[key]?.isEmpty == true { outOfRange[key] = nil }
      return
    }
    let found = ranked[key].flatMap { list -> (place: Int, count: Int)? in
      let place = Self.place(of: candidate, in: list)
      return place < list.count && list[place].file == candidate.file ? (place, list.count) : nil
    }
    guard let found else { return }
    if found.count == 1 { return ranked[key] = nil }
    // In place, as in ``insert(_:forKey:)`` (no other reference to the array is held).
    ranked[key]?.remove(at: found.place)
  }

  /// Where `candidate` goes in `list` (greatest last): the index of the first candidate it does not rank above (its
  /// own place, when it is there).
  private static func place(of candidate: Candidate, in list: [Candidate]) -> Int {
    var low = 0
    var high = list.count
    while low < high {
      let middle = (low + high) / 2
      if candidate.precedes(list[middle]) { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// For each key, the greatest entry that an honest clock read at `now` could have stamped and whose value `decodes`
  /// as the key's type, with the entries skipped: the greatest dishonest stamp of each key, and the greatest entry
  /// that does not decode where it outranks the entry taken (``SyncedFolder/Pull``). Each key's candidates are looked
  /// at greatest first, down to the one taken: an entry ahead of this device's clock by more than a day ranks above
  /// every honest one, and one whose counter no clock makes is kept apart.
  func pull(now: Int64, decoding decodes: (PropertyListKey, PropertyListValue) -> Bool) -> SyncedFolder.Pull {
    var pull = SyncedFolder.Pull()
    var refused: [PropertyListKey: (stamp: SyncStamp, refusal: SyncRefusal)] = [:]
    /// Keeps the greatest dishonest stamp of `key` (of two alike, the first seen).
    func refuse(_ entry: SyncEntry, forKey key: PropertyListKey, reason: String) {
      if let known = refused[key], known.stamp >= entry.stamp { return }
      refused[key] = (entry.stamp, SyncRefusal(key: key, device: entry.stamp.device, reason: reason))
    }
    for (key, byFile) in outOfRange {
      let sorted = byFile.values.sorted {
        Array($0.file.string.utf8).lexicographicallyPrecedes($1.file.string.utf8)
      }
      for candidate in sorted {
        refuse(candidate.entry, forKey: key, reason: candidate.entry.stamp.dishonesty(now: now) ?? "")
      }
    }
    var undecodable: [PropertyListKey: SyncEntry] = [:]
    for (key, candidates) in ranked {
      for candidate in candidates.reversed() {
        let entry = candidate.entry
        if let reason = entry.stamp.dishonesty(now: now) {
          refuse(entry, forKey: key, reason: reason)
          continue
        }
        if let value = entry.value, !decodes(key, value) {
          // The first met is the greatest, and outranks the entry taken below it, if any.
          if undecodable[key] == nil { undecodable[key] = entry }
          continue
        }
        pull.entries[key.string] = candidate.stored
        break
      }
    }
    pull.refusals = refused.mapValues(\.refusal)
    // An entry that does not decode is reported only where it would have been the key's entry: one that a later
    // write of an older version replaced stays in its device's file, and is no news. Its stamp reaches the clock
    // whatever else is reported.
    for (key, entry) in undecodable {
      pull.refusedForValue[key] = entry.stamp
      if let known = refused[key], known.stamp >= entry.stamp { continue }
      pull.refusals[key] = SyncRefusal(key: key, device: entry.stamp.device, reason: SyncDecision.undecodable)
    }
    return pull
  }
}
