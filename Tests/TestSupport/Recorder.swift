import Dispatch
import Foundation

/// How much longer every wait of the tests may take before it counts as a failure: `TEST_TIMEOUT_SCALE`, for runs
/// that are slow as a whole (the whole suite under the thread sanitizer, where every test runs several times slower
/// and the few threads Swift's tasks share are busy for longer). A timeout is a failure bound, never a delay: a wait
/// ends as soon as its event happens.
public let timeoutScale: Double = {
  guard let text = ProcessInfo.processInfo.environment["TEST_TIMEOUT_SCALE"], let scale = Double(text), scale >= 1
  else { return 1 }
  return scale
}()

/// Collects values from any thread and lets a test wait for a condition on them, bounded by a timeout: the one
/// way the tests wait for an event (no sleeping, no polling).
///
/// The lock is an `NSLock` (a pthread mutex), which ThreadSanitizer understands, so the recorder itself never
/// shows up in its reports.
public final class Recorder<Element: Sendable>: @unchecked Sendable {  // every stored property is behind `lock`
  private struct Waiter {
    let id: Int
    let predicate: @Sendable ([Element]) -> Bool
    let continuation: CheckedContinuation<Bool, Never>
  }

  private let lock = NSLock()
  private var items: [Element] = []
  private var waiters: [Waiter] = []
  private var nextID = 0

  /// An empty recorder.
  public init() {}

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  /// The values recorded so far, oldest first.
  public var values: [Element] { locked { items } }
  /// How many values were recorded.
  public var count: Int { locked { items.count } }
  /// The newest value.
  public var last: Element? { locked { items.last } }

  /// Records a value and wakes the waiters whose condition now holds.
  public func append(_ value: Element) {
    let ready = locked { () -> [Waiter] in
      items.append(value)
      let ready = waiters.filter { $0.predicate(items) }
      waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
      return ready
    }
    for waiter in ready { waiter.continuation.resume(returning: true) }
  }

  /// Waits until `predicate` holds for the values seen so far; false if it did not within `timeout` seconds
  /// (times ``timeoutScale``). The waiting task is suspended, holding no thread.
  public func wait(timeout: Double = 30, until predicate: @escaping @Sendable ([Element]) -> Bool) async -> Bool {
    let timeout = timeout * timeoutScale
    return await withCheckedContinuation { continuation in
      let id = locked { () -> Int? in
        if predicate(items) { return nil }
        nextID += 1
        waiters.append(Waiter(id: nextID, predicate: predicate, continuation: continuation))
        return nextID
      }
      guard let id else { return continuation.resume(returning: true) }
      DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
        let expired = locked { () -> Waiter? in
          guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
          return waiters.remove(at: index)
        }
        expired?.continuation.resume(returning: false)
      }
    }
  }
}
