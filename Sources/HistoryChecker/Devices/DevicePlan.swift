// The plan of one randomized history of devices that sync settings (issue 37's checker): devices with skewed clocks
// writing, removing, going offline, restarting, joining as fresh installs and switching accounts, over a model of
// iCloud's key-value store whose deliveries the plan orders, or over a synced folder; over the folder, devices can be
// processes of their own over real suites, killed at random moments. Made from a seed, so that any history can be run
// again; shrunk by dropping operations.

/// One history of 2-4 devices.
package struct DevicePlan: Codable, Sendable, Equatable {
  /// One step of the history. After each, the runner waits until every device's sync is idle.
  package enum Operation: Codable, Sendable, Equatable {
    /// The device writes `value` (unique in the plan) to the key.
    case write(device: Int, key: Int, value: Int)
    /// The device removes the key.
    case remove(device: Int, key: Int)
    /// One waiting delivery of the cloud model moves: the `pick`-th (modulo their count) of those of online devices.
    case deliver(pick: Int)
    /// The device's connection is told of a download once more (a duplicated notification).
    case duplicate(device: Int)
    /// The device goes offline (cloud: nothing of its moves; folder: its sync stops) or comes back.
    case offline(device: Int)
    case online(device: Int)
    /// The device's app restarts: its sync ends and a new one starts over the same store.
    case restart(device: Int)
    /// A fresh install joins: the device's sync starts (its store holds its own values from before).
    case join(device: Int)
    /// Wall time passes on every device.
    case tick(milliseconds: Int)
    /// The device's user switches to the other account (cloud only).
    case switchAccount(device: Int)
    /// The device's process is killed (SIGKILL) `delay` microseconds after the operation before it returned (which is
    /// not waited out: its save or push may be under way), then started again over the same suite (processes only).
    case kill(device: Int, delay: Int)
    /// A hostile or broken peer (another program, an app version whose type differs) writes an entry no device may
    /// take into its own file in the folder (folder only): `kind` picks it among ``Garbage``.
    case garbage(key: Int, kind: Int)
    /// The device's file is replaced by a copy whose entry of the key carries `value` with the device's own stamp
    /// (a forged copy, or one restored from a backup); nothing when the file holds no entry of the key (folder only).
    case forge(device: Int, key: Int, value: Int)
    /// A device's file is deleted (by a user, a file-sync tool's mistake): device `devices` is the hostile peer's
    /// (folder only).
    case deleteFile(device: Int)
    /// A file-sync tool makes a conflict copy of the device's file beside it (folder only).
    case conflictCopy(device: Int)
    /// Every file in the folder is deleted (folder only).
    case emptyFolder
  }

  /// The entries a hostile peer writes (``Operation/garbage(key:kind:)``): none is a value any device may take, and
  /// none may hide another device's entry of its key.
  package enum Garbage: Int, CaseIterable, Sendable {
    /// A well-formed stamp with a string value (an app version whose key has another type).
    case string
    /// A well-formed stamp with an integer beyond `Int`'s range (`UInt64.max`, the greatest a property list holds).
    case hugeInteger
    /// A well-formed stamp and a dictionary value.
    case dictionary
    /// A counter of `Int64.max` (the crash loop of issue 48).
    case counterAtMaximum
    /// A counter below 0.
    case negativeCounter
    /// A wall time two days ahead of the true time (every device's clock is within 3 hours of it).
    case wallAhead
    /// No counter.
    case missingCounter
    /// A string where the entry's dictionary should be.
    case notAnEntry
  }

  /// The name the hostile peer's stamps and file carry.
  package static let hostileDevice = "hostile"

  package var seed: UInt64
  /// Over the synced folder (else the cloud model).
  package var folder: Bool
  /// Each device a process of its own over a real suite, which the plan kills (over the folder only).
  package var processes: Bool
  /// Each device's clock skew in milliseconds, within ± 3 hours.
  package var skews: [Int64]
  /// Whether each device's sync runs from the start (else it joins later).
  package var startsJoined: [Bool]
  /// Each device's own value of each key before its sync starts (nil: none); such values are 1,000,000 or more and
  /// must never be pushed.
  package var ownValues: [[Int?]]
  package var operations: [Operation]

  /// The synced keys.
  package static let keys = ["a", "b", "c"]
  /// The first of the values devices hold before their sync starts.
  package static let ownValueBase = 1_000_000

  package init(
    seed: UInt64, folder: Bool, processes: Bool = false, skews: [Int64], startsJoined: [Bool], ownValues: [[Int?]],
    operations: [Operation]
  ) {
    (self.seed, self.folder, self.processes) = (seed, folder || processes, processes)
    (self.skews, self.startsJoined) = (skews, startsJoined)
    (self.ownValues, self.operations) = (ownValues, operations)
  }

  package var devices: Int { skews.count }

  /// The plan of `seed`: 2-4 devices, 15-60 operations. Processes imply the folder.
  package static func make(seed: UInt64, folder: Bool, processes: Bool = false) -> DevicePlan {
    let folder = folder || processes
    var random = SeededGenerator(seed: seed)
    let devices = Int.random(in: 2...4, using: &random)
    let threeHours: Int64 = 3 * 3_600_000
    let skews = (0..<devices).map { _ in Int64.random(in: -threeHours...threeHours, using: &random) }
    let startsJoined = (0..<devices).map { $0 < 2 || Bool.random(using: &random) }
    let ownValues = (0..<devices).map { device in
      keys.indices.map { key in
        Int.random(in: 0..<10, using: &random) < 3 ? ownValueBase + device * 10 + key : nil
      }
    }
    var joined = startsJoined
    var operations: [Operation] = []
    for index in 0..<Int.random(in: 15...60, using: &random) {
      let device = Int.random(in: 0..<devices, using: &random)
      let key = Int.random(in: 0..<keys.count, using: &random)
      let roll = Int.random(in: 0..<100, using: &random)
      if folder && Int.random(in: 0..<100, using: &random) < 10 {
        operations.append(hostile(device: device, key: key, value: index + 1, devices: devices, using: &random))
        continue
      }
      guard joined[device] else {
        if roll < 30 {
          joined[device] = true
          operations.append(.join(device: device))
        }
        continue
      }
      switch roll {
      case 0..<30: operations.append(.write(device: device, key: key, value: index + 1))
      case 30..<36: operations.append(.remove(device: device, key: key))
      case 36..<66:
        operations.append(folder ? .tick(milliseconds: 1) : .deliver(pick: Int.random(in: 0..<16, using: &random)))
      case 66..<69:
        if processes {
          operations.append(.kill(device: device, delay: Int.random(in: 0...120_000, using: &random)))
        } else if !folder {
          operations.append(.duplicate(device: device))
        }
      case 69..<74: operations.append(.offline(device: device))
      case 74..<81: operations.append(.online(device: device))
      case 81..<85: operations.append(.restart(device: device))
      case 85..<97: operations.append(.tick(milliseconds: Int.random(in: 0...5_000, using: &random)))
      default:
        if processes {
          operations.append(.kill(device: device, delay: Int.random(in: 0...120_000, using: &random)))
        } else if !folder {
          operations.append(.switchAccount(device: device))
        }
      }
    }
    return DevicePlan(
      seed: seed, folder: folder, processes: processes, skews: skews, startsJoined: startsJoined, ownValues: ownValues,
      operations: operations)
  }

  /// One of a hostile or careless peer's operations on the folder.
  private static func hostile(
    device: Int, key: Int, value: Int, devices: Int, using random: inout SeededGenerator
  ) -> Operation {
    switch Int.random(in: 0..<10, using: &random) {
    case 0..<4: .garbage(key: key, kind: Int.random(in: 0..<Garbage.allCases.count, using: &random))
    case 4..<6: .forge(device: device, key: key, value: value)
    case 6..<8: .deleteFile(device: Int.random(in: 0...devices, using: &random))
    case 8: .conflictCopy(device: device)
    default: .emptyFolder
    }
  }

  /// The plan without operation `index` (a write's value stays unique).
  package func dropping(_ index: Int) -> DevicePlan {
    var plan = self
    plan.operations.remove(at: index)
    return plan
  }
}
