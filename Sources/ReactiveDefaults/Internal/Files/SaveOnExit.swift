import Foundation

/// Saves, at normal process exit, the suites whose coalesced save has not run yet: `set` then `exit(0)` loses
/// nothing.
enum SaveOnExit {
  private static let pending = Locked<[ObjectIdentifier: WeakPersistence]>([:])
  private static let installed: Bool = {
    atexit { SaveOnExit.saveAll() }
    return true
  }()

  private struct WeakPersistence {
    weak var persistence: SuitePersistence?
  }

  static func add(_ persistence: SuitePersistence) {
    _ = installed
    pending.withLock { $0[ObjectIdentifier(persistence)] = WeakPersistence(persistence: persistence) }
  }

  static func remove(_ persistence: SuitePersistence) {
    _ = pending.withLock { $0.removeValue(forKey: ObjectIdentifier(persistence)) }
  }

  /// Saves running now (a coalesced save on a background thread took its keys off the pending list).
  static let inFlight = DispatchGroup()

  /// How long the exit waits for saves already running: long enough for a slow disk, bounded in case one waits for
  /// a lock another process holds.
  static let inFlightTimeout: DispatchTimeInterval = .seconds(10)

  /// Internal, not private: the tests call it before they remove the suites they made, so that nothing is saved after.
  static func saveAll() {
    let all = pending.withLock { pending in
      defer { pending = [:] }
      return pending.values.compactMap(\.persistence)
    }
    for persistence in all { persistence.saveReportingFailure() }
    _ = inFlight.wait(timeout: .now() + inFlightTimeout)
  }
}
