import Foundation

/// Units of work for a test's background loop (a reader in a tight loop, threads that open and release stores,
/// descriptors opened and closed): the test adds units as it goes, and the loop takes one before each step, waiting
/// while there are none.
///
/// A background loop paid by the test's progress does the same work however long the test takes. A loop that ran for
/// as long as its test did held a core (and the library's locks) for minutes whenever the rest of the suite made that
/// test slow, which made the rest slower still: the same suite took 70 s or 260 s (2026-12-07).
public final class WorkBudget: @unchecked Sendable {  // `units` and `ended` are behind `condition`
  private let condition = NSCondition()
  private var units = 0
  private var ended = false

  /// An empty budget.
  public init() {}

  /// Adds `count` units and wakes the loops waiting for them.
  public func add(_ count: Int) {
    condition.lock()
    units += count
    condition.broadcast()
    condition.unlock()
  }

  /// Takes one unit, waiting while there is none; false once the budget has ended (the loop then stops).
  public func take() -> Bool {
    condition.lock()
    defer { condition.unlock() }
    while units == 0 && !ended { condition.wait() }
    guard !ended else { return false }
    units -= 1
    return true
  }

  /// Ends the budget: every ``take()`` from now on returns false at once.
  public func end() {
    condition.lock()
    ended = true
    condition.broadcast()
    condition.unlock()
  }
}
