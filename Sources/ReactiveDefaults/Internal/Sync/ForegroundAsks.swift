/// When each remote of the process was last asked to synchronize, so that the app coming to the foreground asks at most
/// once a minute: Apple's page for `NSUbiquitousKeyValueStore.synchronize()` asks for it "sparingly", at launch or
/// when the app returns to the foreground, and AppKit's `didBecomeActiveNotification` comes at every switch back to
/// the app. A sync's start and ``DefaultsSync/synchronize()`` always ask (and count as the last ask); a foreground
/// after a longer absence asks again. Per remote object, whichever syncs share it; times are the syncs' wall clocks,
/// in milliseconds.
enum ForegroundAsks {
  /// The shortest time between a remote's last ask and a foreground's, in milliseconds.
  static let interval: Int64 = 60_000

  private struct Last {
    weak var remote: (any DefaultsRemote)?
    var at: Int64
  }

  private static let last = Locked<[ObjectIdentifier: Last]>([:])

  /// Records that `remote` was asked at `time`.
  static func asked(_ remote: any DefaultsRemote, at time: Int64) {
    last.withLock { last in
      last = last.filter { $0.value.remote != nil }
      last[ObjectIdentifier(remote)] = Last(remote: remote, at: time)
    }
  }

  /// Whether the app coming to the foreground at `time` may ask `remote` to synchronize: it was not asked in the
  /// last ``interval`` (or never, or the clock went back).
  static func mayAsk(_ remote: any DefaultsRemote, at time: Int64) -> Bool {
    last.withLock { last in
      guard let previous = last[ObjectIdentifier(remote)], previous.remote === remote else { return true }
      let (gap, overflow) = time.subtractingReportingOverflow(previous.at)
      return overflow || gap < 0 || gap >= interval
    }
  }
}
