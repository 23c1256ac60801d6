import Dispatch
import Foundation

/// Runs blocking work on a thread of its own and awaits its result: a test that blocks (waits for a child process,
/// saturates threads, saves thousands of times) must not hold one of the few threads Swift concurrency runs every
/// test's tasks on, or the other tests' awaits starve. Not a Dispatch thread: on Linux Swift's tasks run on Dispatch's
/// global threads, which the library's own background work (reloads on file events, coalesced saves) uses too, so
/// blocking one there starves all three. (Before, a whole-suite run began most tests after about 460 s: the blocking
/// work of a few held every thread they shared.)
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try work() }) }
    thread.name = "offThePool"
    thread.start()
  }
}

/// Runs `body` on `count` threads of its own at once (index 0..<count) and returns when all have finished.
///
/// Dedicated threads, not Dispatch's: work that blocks for long (waiting for a file lock, `fsync`) on Dispatch's
/// global threads holds back every other test's `offThePool` work and timeouts, since Dispatch on Linux does not
/// know the threads are blocked and adds none.
public func onThreadsOfTheirOwn(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    let countdown = Countdown(count)
    for index in 0..<count {
      let thread = Thread {
        body(index)
        if countdown.arrive() { continuation.resume() }
      }
      thread.start()
    }
  }
}

/// Counts arrivals down; exactly one arrival (the last) is told it was the last. An `NSLock`, which
/// ThreadSanitizer understands (see ``Recorder``).
private final class Countdown: @unchecked Sendable {  // `remaining` is behind `lock`
  private let lock = NSLock()
  private var remaining: Int

  init(_ count: Int) {
    remaining = count
  }

  func arrive() -> Bool {
    lock.withLock {
      remaining -= 1
      return remaining == 0
    }
  }
}

/// Runs the jobs of the tasks that prefer it on one thread of its own, so that a task a test depends on (a stream's
/// consumer) runs even while every thread Swift's tasks share is busy with other tests. On Linux those threads are
/// Dispatch's global ones, which blocking work elsewhere in the test run takes as well.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {  // `jobs` is behind `condition`
  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []

  /// Starts the thread; it lives as long as the test process.
  public init() {
    let thread = Thread { [self] in run() }
    thread.name = "ThreadExecutor"
    thread.start()
  }

  /// Queues a job for the thread.
  public func enqueue(_ job: UnownedJob) {
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func run() {
    while true {
      condition.lock()
      while jobs.isEmpty { condition.wait() }
      let job = jobs.removeFirst()
      condition.unlock()
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}

/// The one ``ThreadExecutor`` of the test process.
public let testThreadExecutor = ThreadExecutor()
