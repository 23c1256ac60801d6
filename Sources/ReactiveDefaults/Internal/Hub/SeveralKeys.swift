/// A multi-key observation: the newest value of each key, and the handler, called one thread at a time.
final class SeveralKeys<each Value: DefaultsValue>: Sendable {
  let slots: (repeat Slot<each Value>)
  private let handler: @Sendable (repeat each Value) -> Void
  private let emitter = Emitter()
  /// While the observers register, changes only mark that one happened (emitted once setup is done).
  private let setup = Locked((done: false, changed: false))

  init(slots: repeat Slot<each Value>, handler: @escaping @Sendable (repeat each Value) -> Void) {
    self.slots = (repeat each slots)
    self.handler = handler
  }

  private func current<Element>(_ slot: Slot<Element>) -> Element { slot.value }

  /// A key changed: emit, unless the observation is still being set up.
  func changed() {
    let now = setup.withLock { setup -> Bool in
      guard setup.done else {
        setup.changed = true
        return false
      }
      return true
    }
    if now { emit() }
  }

  /// Ends the setup: emits the current values when asked, or when a change arrived during the setup.
  func finishSetup(emitting initial: Bool) {
    let changedMeanwhile = setup.withLock { setup -> Bool in
      setup.done = true
      return setup.changed
    }
    if initial || changedMeanwhile { emit() }
  }

  /// Calls the handler with every key's newest value (or makes the thread already calling it call it again).
  func emit() {
    guard emitter.begin() else { return }
    repeat {
      handler(repeat current(each slots))
    } while emitter.continues()
  }
}
