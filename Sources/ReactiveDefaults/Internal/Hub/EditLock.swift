import Dispatch

/// Lets one ``DefaultsStore/edit(_:)`` at a time run on a suite in this process, and tells a thread that asks again
/// while it holds the lock (an edit's body editing the same suite), which would otherwise wait for itself.
///
/// The lock is held while the edit's body runs, which is the caller's code: so it is not a `Mutex` (held only
/// around short state changes, never around unknown code) but a gate whose waiters sleep on a semaphore.
final class EditLock: Sendable {
  private struct State {
    var owner: UInt = 0
    var waiters: [DispatchSemaphore] = []
  }

  private let state = Locked(State())

  private enum Decision {
    case taken
    case heldByThisThread
    case wait(DispatchSemaphore)
  }

  /// Takes the lock, waiting while another thread holds it; returns false at once if this thread holds it.
  func lock() -> Bool {
    let thread = currentThreadID()
    LockOrder.taking(.edit)
    while true {
      let decision = state.withLock { state -> Decision in
        if state.owner == thread { return .heldByThisThread }
        if state.owner == 0 {
          state.owner = thread
          return .taken
        }
        let signal = DispatchSemaphore(value: 0)
        state.waiters.append(signal)
        return .wait(signal)
      }
      switch decision {
      case .taken: return true
      case .heldByThisThread:
        LockOrder.released(.edit)
        return false
      case .wait(let signal): signal.wait()
      }
    }
  }

  /// Releases the lock and wakes the first waiter, which then tries again.
  func unlock() {
    LockOrder.released(.edit)
    let waiter = state.withLock { state -> DispatchSemaphore? in
      state.owner = 0
      return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
    }
    waiter?.signal()
  }
}
