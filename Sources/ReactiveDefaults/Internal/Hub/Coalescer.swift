import Dispatch

/// Coalesces a burst of requests into one run of work off the requesting thread (which may be inside a write, or
/// inside Apple's notification machinery, holding locks): the first request schedules a run on a global queue, and
/// the requests that arrive before it starts join it, with their items. A request made while a run is under way
/// schedules the next run, so nothing asked for is missed.
final class Coalescer<Item: Hashable & Sendable>: Sendable {
  /// The items of the run scheduled and not started; nil when none is.
  private let pending = Locked<Set<Item>?>(nil)

  init() {}

  /// Asks for a run with `items`; `run` is what the scheduled run calls, with every item asked for until it started
  /// (the first request's `run` when several are coalesced). Returns whether this request scheduled the run.
  @discardableResult
  func request(_ items: some Sequence<Item>, _ run: @escaping @Sendable ([Item]) -> Void) -> Bool {
    let scheduled = pending.withLock { pending -> Bool in
      guard pending == nil else {
        pending!.formUnion(items)
        return false
      }
      pending = Set(items)
      return true
    }
    guard scheduled else { return false }
    DispatchQueue.global().async { [self] in
      let items = pending.withLock { pending in
        defer { pending = nil }
        return Array(pending ?? [])
      }
      run(items)
    }
    return true
  }
}
