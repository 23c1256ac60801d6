import Dispatch

/// Runs blocking work on a Dispatch thread and awaits its result: a test that blocks (waits for a child process,
/// saturates threads, saves thousands of times) must not hold one of the few threads Swift concurrency runs every
/// test's tasks on, or the other tests' awaits starve.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
  }
}
