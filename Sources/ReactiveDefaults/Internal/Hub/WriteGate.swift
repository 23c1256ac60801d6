import Dispatch
import Synchronization

/// Lets one write at a time reach a suite's storage, without holding a lock while storage calls out.
///
/// On Apple platforms `UserDefaults.set` calls the app's key-value and `didChangeNotification` observers
/// synchronously, on the writing thread. If one of them writes the store again, that write must neither deadlock
/// nor overtake the write in progress. So a write from the thread that holds the gate is queued and done by that
/// thread right after the current one (in order, before the gate opens); a write from another thread waits for
/// the gate, and waiting threads have it in turn. Storage order is thus the order in which the hub records versions.
final class WriteGate: Sendable {
  /// What ``enter(_:)`` decided.
  enum Entry {
    /// The caller holds the gate: it writes, then takes ``next()`` until that returns nil.
    case proceed
    /// The caller already holds the gate (a write from inside a callback of its own write): queued.
    case queued
  }

  private struct Pending: Sendable {
    var write: StorageWrite
    var key: String
  }

  private struct State {
    var owner: UInt = 0
    /// The owner holds the gate for an edit whose body runs (the caller's code, not a write).
    var inEditBody = false
    var queued: [Pending] = []
    /// The threads waiting, first come first served: the gate passes straight to the first when its holder leaves.
    var waiters: [(thread: UInt, signal: DispatchSemaphore)] = []

    enum EnterAction {
      case proceed
      case queued
      case wait(DispatchSemaphore)
    }

    mutating func enter(_ pending: Pending?, thread: UInt) -> EnterAction {
      if owner == 0 {
        owner = thread
        return .proceed
      }
      if owner == thread, let pending {
        queued.append(pending)
        return .queued
      }
      let signal = DispatchSemaphore(value: 0)
      waiters.append((thread, signal))
      return .wait(signal)
    }

    enum LeaveAction {
      case write(Pending)
      case open(wake: DispatchSemaphore?)
    }

    mutating func next() -> LeaveAction {
      if !queued.isEmpty { return .write(queued.removeFirst()) }
      guard !waiters.isEmpty else {
        owner = 0
        return .open(wake: nil)
      }
      // Handed over, not opened: a holder that enters again at once (a stream of writes) would otherwise take the
      // gate back each time before the woken thread runs, and a save waiting for it would wait for the whole stream.
      let first = waiters.removeFirst()
      owner = first.thread
      return .open(wake: first.signal)
    }
  }

  private let state = Locked(State())
  /// Called (outside the gate's lock) each time a thread starts waiting for the gate (for tests).
  let waitStarted = Locked<(@Sendable () -> Void)?>(nil)

  /// Asks to write `write` to `key`; waits while another thread writes.
  func enter(_ write: StorageWrite, forKey key: String) -> Entry {
    enter(Pending(write: write, key: key)) ? .proceed : .queued
  }

  private func enter(_ pending: Pending?) -> Bool {
    let thread = currentThreadID()
    LockOrder.taking(.writeGate)
    switch state.withLock({ $0.enter(pending, thread: thread) }) {
    case .proceed: return true
    case .queued:
      LockOrder.released(.writeGate)
      return false
    case .wait(let signal):
      waitStarted.withLock { $0 }?()
      // Woken once the gate is this thread's (``State/next()``).
      signal.wait()
      return true
    }
  }

  /// The next queued write for the holder to do, or nil: then the gate is open again.
  func next() -> (write: StorageWrite, key: String)? {
    switch state.withLock({ $0.next() }) {
    case .write(let pending): return (pending.write, pending.key)
    case .open(let wake):
      LockOrder.released(.writeGate)
      wake?.signal()
      return nil
    }
  }

  /// Waits for the gate and holds it (never call it from inside a write: check ``isHeldByCurrentThread``); the
  /// caller writes, then takes ``next()`` until that returns nil.
  func enterForSeveralWrites() {
    _ = enter(nil)
  }

  /// Runs `body` while no write is in progress (waiting for the gate; never from inside a write).
  func excludingWrites<T>(_ body: () -> T) -> T {
    // Inside a write of this thread's own (a callback), no other write can be in progress.
    if isHeldByCurrentThread { return body() }
    _ = enter(nil)
    defer {
      // Nothing can have been queued: only the holder's own writes queue, and `body` writes nothing.
      _ = next()
    }
    return body()
  }

  /// Marks the holder's hold as an edit's body (true) or its writes (false): storage's callbacks during the body are
  /// not the hub's own writes (``isWritingOnCurrentThread``).
  func setInEditBody(_ inBody: Bool) {
    state.withLock { $0.inEditBody = inBody }
  }

  /// Whether the calling thread is inside a write of the hub's own (storage calling back during it), not inside an
  /// edit's body, where a plain `UserDefaults` write's callbacks are news.
  var isWritingOnCurrentThread: Bool {
    let thread = currentThreadID()
    return state.withLock { $0.owner == thread && !$0.inEditBody }
  }

  /// Whether the calling thread is inside a write (a callback that storage made during it).
  var isHeldByCurrentThread: Bool {
    let thread = currentThreadID()
    return state.withLock { $0.owner == thread }
  }
}
