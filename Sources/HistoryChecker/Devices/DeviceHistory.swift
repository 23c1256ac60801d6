// What a run of a DevicePlan produced, and the sync's contract checked on it.

/// A stamp as a remote entry holds it.
package struct DeviceStamp: Codable, Sendable, Equatable, Comparable {
  package var wall: Int64
  package var counter: Int64
  package var device: String

  package init(wall: Int64, counter: Int64, device: String) {
    (self.wall, self.counter, self.device) = (wall, counter, device)
  }

  package static func < (left: DeviceStamp, right: DeviceStamp) -> Bool {
    if left.wall != right.wall { return left.wall < right.wall }
    if left.counter != right.counter { return left.counter < right.counter }
    return Array(left.device.utf8).lexicographicallyPrecedes(right.device.utf8)
  }
}

/// What one run of a plan left and saw.
package struct DeviceHistory: Codable, Sendable, Equatable {
  /// An entry that reached the remote: the cloud model's server (in arrival order), or a device's file (its last).
  package struct Upload: Codable, Sendable, Equatable {
    package var account: String
    package var key: Int
    /// The value (nil: a removal).
    package var value: Int?
    package var stamp: DeviceStamp

    package init(account: String, key: Int, value: Int?, stamp: DeviceStamp) {
      (self.account, self.key, self.value, self.stamp) = (account, key, value, stamp)
    }
  }

  /// A write (or removal: nil) a device made, at operation `operation`, on `account`, when its clock read `wall`
  /// (the least wall time its stamp can have: it is stamped then or later).
  package struct Write: Codable, Sendable, Equatable {
    package var operation: Int
    package var device: Int
    package var key: Int
    package var value: Int?
    package var account: String
    package var wall: Int64
    /// Made while the device's sync was stopped (a folder device offline), and undone before it started again: the
    /// sync, which sees only the value its store holds when it starts, has nothing to push. Or lost when the device's
    /// process was killed before its save: the store held an earlier value when it started again.
    package var undone = false
    /// The value the device's store held for the key just before the write (nil: none, or not known: a device of a
    /// process of its own). Values are unique in a plan, so it names the entry the device had pulled, if another
    /// device wrote it.
    package var seen: Int?

    package init(
      operation: Int, device: Int, key: Int, value: Int?, account: String, wall: Int64, seen: Int? = nil
    ) {
      (self.operation, self.device, self.key, self.value, self.account) = (operation, device, key, value, account)
      (self.wall, self.seen) = (wall, seen)
    }
  }

  /// A value a forged copy of a device's file gave its entry of a key, with the device's stamp
  /// (``DevicePlan/Operation/forge(device:key:value:)``).
  package struct Forgery: Codable, Sendable, Equatable {
    /// The plan's operation that made it.
    package var operation: Int
    package var key: Int
    package var value: Int
    /// The sync name of the device whose stamp it took.
    package var device: String

    package init(operation: Int, key: Int, value: Int, device: String) {
      (self.operation, self.key, self.value, self.device) = (operation, key, value, device)
    }
  }

  /// Each device's sync name (its file's name in a folder), nil for a device that never joined.
  package var deviceNames: [String?] = []
  /// The account every device is on at the end.
  package var finalAccount = "A"
  /// Each device's stored value of each key at the end (nil: none); empty for a device that never joined.
  package var finalValues: [[Int?]] = []
  /// What each device's observer of each key heard, in order.
  package var heard: [[[Int?]]] = []
  package var uploads: [Upload] = []
  package var writes: [Write] = []
  /// A device's run problems (a sync never idle, a problem reported): each is a failure.
  package var problems: [String] = []
  /// How many times a device's process was killed.
  package var kills = 0
  package var forgeries: [Forgery] = []
  /// How many entries of the hostile peer devices refused and reported (each is expected, not a problem).
  package var refusals = 0

  package init() {}

  /// Every rule the history breaks, as sentences (empty: none).
  package func violations(of plan: DevicePlan) -> [String] {
    var found = problems
    let joined = deviceNames.indices.filter { deviceNames[$0] != nil }
    let final = uploads.filter { $0.account == finalAccount }
    for key in DevicePlan.keys.indices {
      let entries = final.filter { $0.key == key }
      // Convergence to the greatest stamp, for a key some device wrote.
      if let best = entries.max(by: { Self.outranks($1, $0) }) {
        for device in joined where finalValues[device][key] != best.value {
          found.append(
            "key \(key): device \(device) holds \(describe(finalValues[device][key])), not \(describe(best.value)) "
              + "of the greatest stamp \(best.stamp)")
        }
      }
      // No re-stamp: an entry's stamp names the device that made that write.
      for upload in uploads where upload.key == key {
        let makers = writes.filter { $0.key == key && $0.value == upload.value && $0.account == upload.account }
          .compactMap { deviceNames[$0.device] }
        let forged = forgeries.contains {
          $0.key == key && $0.value == upload.value && $0.device == upload.stamp.device
        }
        if !makers.contains(upload.stamp.device) && !forged {
          found.append(
            "key \(key): \(describe(upload.value)) reached account \(upload.account) stamped by \(upload.stamp.device), "
              + "which did not write it there (device \(index(of: upload.stamp.device)): a pull re-stamped, or a value "
              + "never written was pushed)")
        }
        if let value = upload.value, value >= DevicePlan.ownValueBase {
          found.append("key \(key): a device's own value \(value) from before its sync was pushed")
        }
      }
      // No lost write: each device's last write of the key on the final account (of those not undone) reached it, or
      // lost to an entry stamped later than that write can be (a device that had not seen the other's write, with a
      // clock behind).
      for device in joined {
        guard let last = writes.last(where: { $0.device == device && $0.key == key && !$0.undone }),
          last.account == finalAccount
        else { continue }
        let name = deviceNames[device]
        // Or replaced, with its stamp, by a forged copy made after it.
        let forged = Set(
          forgeries.filter { $0.key == key && $0.device == name && $0.operation > last.operation }.map(\.value))
        let reached = entries.contains {
          $0.stamp.device == name && ($0.value == last.value || $0.value.map(forged.contains) == true)
        }
        let beaten = entries.contains { $0.stamp.device != name && $0.stamp.wall >= last.wall }
        // A removal where the remote never held the key, by a device whose sync never saw it hold one (written and
        // removed while offline), changes nothing to push.
        let nothingToRemove = last.value == nil && entries.isEmpty
        if !reached && !beaten && !nothingToRemove {
          found.append(
            "key \(key): device \(device)'s last write \(describe(last.value)) (operation \(last.operation), clock "
              + "\(last.wall)) never reached account \(finalAccount), and no later stamp beat it")
        }
      }
      found += causalityViolations(key: key)
      // Observers: told once per change, and left on the stored value.
      for device in joined {
        let values = heard[device][key]
        for (earlier, later) in zip(values, values.dropFirst()) where earlier == later {
          found.append("key \(key): device \(device)'s observer heard \(describe(later)) twice in a row: \(values)")
          break
        }
        if values.last != finalValues[device][key] {
          found.append(
            "key \(key): device \(device)'s observer was left on \(describe(values.last ?? nil)), the store holds "
              + describe(finalValues[device][key]))
        }
      }
    }
    return found
  }

  /// Causality (the sync article's promise): a write made after the device pulled another device's entry outranks
  /// that entry, whatever the clocks say. Checked for each write whose value reached the account stamped by its
  /// device, against the entry of the value its store held just before (when that entry is on record: a folder
  /// device's file keeps only its last entry). The lost-write rule's excuse (a later stamp) cannot hide a break of
  /// it: a device whose clock ignored what it pulled would stamp its write below the entry it replaced, and lose.
  private func causalityViolations(key: Int) -> [String] {
    var found: [String] = []
    for write in writes where write.key == key {
      guard let seen = write.seen, let value = write.value, let name = deviceNames[write.device] else { continue }
      let made = uploads.filter {
        $0.account == write.account && $0.key == key && $0.value == value && $0.stamp.device == name
      }
      let pulled = uploads.filter {
        $0.account == write.account && $0.key == key && $0.value == seen && $0.stamp.device != name
      }
      for upload in made {
        guard let entry = pulled.first(where: { !($0.stamp < upload.stamp) }) else { continue }
        found.append(
          "key \(key): device \(write.device)'s write \(value) (operation \(write.operation)) was made after it pulled "
            + "\(seen) stamped \(entry.stamp), yet is stamped \(upload.stamp), not above it: a write after a pull must "
            + "outrank the pulled entry")
        break
      }
    }
    return found
  }

  /// Whether entry `left` outranks `right`, as the sync ranks them: by stamp, and of two with one stamp (a forged
  /// copy and the original), by the bytes of the value's XML (no value ranks last).
  package static func outranks(_ left: Upload, _ right: Upload) -> Bool {
    if left.stamp != right.stamp { return right.stamp < left.stamp }
    func bytes(_ value: Int?) -> [UInt8] { value.map { Array("<integer>\($0)</integer>\n".utf8) } ?? [] }
    return bytes(right.value).lexicographicallyPrecedes(bytes(left.value))
  }

  /// Whether a store's report is a refusal of the hostile peer's entry (``DevicePlan/Operation/garbage(key:kind:)``):
  /// expected, and no problem.
  package static func isHostileRefusal(_ report: String) -> Bool {
    report.contains("the entry of device \(DevicePlan.hostileDevice) is refused")
  }

  /// A device's number in the plan, from its sync name.
  private func index(of name: String) -> String {
    deviceNames.firstIndex(of: name).map(String.init) ?? "unknown"
  }

  private func describe(_ value: Int?) -> String {
    value.map(String.init) ?? "nothing"
  }
}
