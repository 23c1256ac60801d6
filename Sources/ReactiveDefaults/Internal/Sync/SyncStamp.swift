import Foundation

/// When a setting was written, as a hybrid logical clock reads it: the writer's wall time (milliseconds since 1970),
/// a counter for writes within one millisecond (or made after seeing a stamp from a clock ahead of the writer's),
/// and the writing device. Stamps are totally ordered by those three, in that order; the device breaks ties the same
/// way on every device (by its name's UTF-8 bytes).
///
/// A device's clock (``SyncClock``) never stamps a write below a stamp it has seen: a device whose clock runs hours
/// behind still wins with a write made after it saw the other device's.
struct SyncStamp: Hashable, Comparable, Sendable, CustomStringConvertible {
  var wall: Int64
  var counter: Int64
  var device: String

  static func < (left: SyncStamp, right: SyncStamp) -> Bool {
    if left.wall != right.wall { return left.wall < right.wall }
    if left.counter != right.counter { return left.counter < right.counter }
    return Array(left.device.utf8).lexicographicallyPrecedes(right.device.utf8)
  }

  static func == (left: SyncStamp, right: SyncStamp) -> Bool {
    left.wall == right.wall && left.counter == right.counter && Array(left.device.utf8) == Array(right.device.utf8)
  }

  func hash(into hasher: inout Hasher) {
    hasher.combine(wall)
    hasher.combine(counter)
    hasher.combine(Array(device.utf8))
  }

  var description: String { "\(wall).\(counter)@\(device)" }

  /// The furthest an honest device's clock runs ahead of this device's: a day, in milliseconds. (Clocks of devices
  /// that sync run within seconds of each other; hours apart is a wrong time zone or a dead clock battery.)
  static let maximumLead: Int64 = 86_400_000
  /// The greatest counter an honest clock makes: 2^32 writes stamped within one millisecond of wall time, or after
  /// seeing a stamp at most ``maximumLead`` ahead (a device writing once a microsecond for a day makes 2^36; one that
  /// syncs settings makes a few thousand).
  static let maximumCounter: Int64 = 1 << 32

  /// Why this stamp, from another device, could not have come from an honest clock read at `now` (this device's
  /// wall time, milliseconds since 1970); nil when it could. A stamp that could not is never taken in: fed to this
  /// device's clock it would make every later write of this device lose to it, and a counter near `Int64.max`
  /// would leave the clock no room to count.
  func dishonesty(now: Int64) -> String? {
    if counter < 0 || counter > Self.maximumCounter {
      return "its stamp's counter \(counter) is beyond what a clock makes (0 to \(Self.maximumCounter))"
    }
    let (latest, overflow) = now.addingReportingOverflow(Self.maximumLead)
    if !overflow, wall > latest {
      return "its stamp (\(wall) ms since 1970) is more than a day ahead of this device's clock (\(now))"
    }
    return nil
  }
}

/// A device's hybrid logical clock: the greatest wall time and counter it has stamped or seen.
struct SyncClock: Equatable, Sendable {
  var wall: Int64 = 0
  var counter: Int64 = 0

  /// A stamp for a write made now, above every stamp this clock stamped or saw. Never traps: a counter at its end
  /// (which only a stamp the clock should have refused can bring: ``SyncStamp/dishonesty(now:)``) moves the wall
  /// time on by a millisecond instead, which still stamps above; at the end of both, the stamp is the clock's last.
  mutating func tick(now: Int64, device: String) -> SyncStamp {
    if now > wall {
      wall = now
      counter = 0
    } else if counter < Self.counterLimit {
      counter += 1
    } else if wall < Int64.max {
      // Counting on would make stamps other devices refuse: the next millisecond instead, still above.
      wall += 1
      counter = 0
    }
    return SyncStamp(wall: wall, counter: counter, device: device)
  }

  /// The greatest counter this clock stamps, and sees: half the greatest another device's may hold, so that a stamp
  /// at the bound, seen, leaves room for this device's own writes within what other devices accept.
  static let counterLimit = SyncStamp.maximumCounter / 2
  /// How far ahead of this device's clock a stamp it sees may be: half the most another device's may be, so that
  /// this device's stamps, carried ahead by it, stay within what other devices accept though their clocks lag.
  static let leadLimit = SyncStamp.maximumLead / 2

  /// Whether the clock takes in `stamp` (``see(_:)``) at `now`: within ``counterLimit`` and ``leadLimit``. A stamp
  /// beyond them but within ``SyncStamp/dishonesty(now:)``'s bounds is accepted as a value without being seen: a
  /// write of this device may then lose to it until this device's clock reaches it (a millisecond for a great
  /// counter; for a stamp half a day to a day ahead, until the time it names).
  static func takesIn(_ stamp: SyncStamp, now: Int64) -> Bool {
    let (latest, overflow) = now.addingReportingOverflow(leadLimit)
    return stamp.counter >= 0 && stamp.counter <= counterLimit && (overflow || stamp.wall <= latest)
  }

  /// Whether the clock could have been made by an honest clock read at `now` from the stamps it saw
  /// (``SyncStamp/dishonesty(now:)``): one saved before stamps from outside were bounded may hold a poisoned time.
  func isHonest(now: Int64) -> Bool {
    SyncStamp(wall: wall, counter: counter, device: "").dishonesty(now: now) == nil
  }

  /// Takes in a stamp from elsewhere: the next ``tick(now:device:)`` stamps above it.
  mutating func see(_ stamp: SyncStamp) {
    if stamp.wall > wall || (stamp.wall == wall && stamp.counter > counter) {
      (wall, counter) = (stamp.wall, stamp.counter)
    }
  }

  /// The wall time now, in milliseconds since 1970.
  static func now() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
  }
}

/// One setting as the remote holds it: its value (nil: removed, a tombstone) and the stamp of the write that made it.
/// Stored as one entry under the setting's own key (no extra keys against a remote's key limit): a dictionary with
/// the stamp's parts `t` (wall), `c` (counter), `d` (device) and the value `v` (absent for a removal).
struct SyncEntry: Hashable, Sendable {
  var stamp: SyncStamp
  var value: PropertyListValue?

  init(stamp: SyncStamp, value: PropertyListValue?) {
    self.stamp = stamp
    self.value = value
  }

  /// The entry a remote holds; nil for anything else (an entry another program wrote, or a damaged one: it is
  /// ignored, and this device's own entry replaces it at its next write).
  init?(_ stored: PropertyListValue) {
    guard case .dictionary(let fields) = stored, case .integer(let wall)? = fields["t"],
      case .integer(let counter)? = fields["c"], case .string(let device)? = fields["d"],
      let wall = Int64(exactly: wall), let counter = Int64(exactly: counter), !device.isEmpty
    else { return nil }
    stamp = SyncStamp(wall: wall, counter: counter, device: device)
    value = fields["v"]
  }

  /// Whether this entry wins over `other`: the one with the greater stamp; of two with one stamp and different values
  /// (a device's file forged, or restored from a backup), the one whose value's XML sorts after (a removal's, none,
  /// sorts first). A total order on entries: every device that holds both picks the same, whichever it held first.
  func outranks(_ other: SyncEntry) -> Bool {
    if stamp != other.stamp { return stamp > other.stamp }
    // By the XML alone, not by `==` first: values equal by `==` but written differently (0.0 and -0.0, a string in
    // two Unicode normalizations) would otherwise tie with each other and not with a third value between them, and
    // the order would not be one.
    let mine = value.map(XMLPropertyList.encode(value:)) ?? []
    let theirs = other.value.map(XMLPropertyList.encode(value:)) ?? []
    return theirs.lexicographicallyPrecedes(mine)
  }

  var propertyListValue: PropertyListValue {
    var fields: [PropertyListKey: PropertyListValue] = [
      "t": .integer(Int128(stamp.wall)), "c": .integer(Int128(stamp.counter)), "d": .string(stamp.device),
    ]
    if let value { fields["v"] = value }
    return .dictionary(fields)
  }
}
