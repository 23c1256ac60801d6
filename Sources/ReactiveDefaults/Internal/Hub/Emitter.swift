/// Calls a multi-key handler one thread at a time: a change that arrives while it runs makes the running thread
/// call it again when it returns.
final class Emitter: Sendable {
  private struct State {
    var running = false
    var again = false
  }

  private let state = Locked(State())

  /// Whether the caller is to call the handler (no other thread is); else the running thread calls it again.
  func begin() -> Bool {
    state.withLock { state in
      guard !state.running else {
        state.again = true
        return false
      }
      state.running = true
      return true
    }
  }

  /// After a call: whether to call again (a change arrived meanwhile); else the caller is done.
  func continues() -> Bool {
    state.withLock { state in
      guard state.again else {
        state.running = false
        return false
      }
      state.again = false
      return true
    }
  }
}
