import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The tests' children, started and killed by several tasks at once while other threads open and close descriptors:
/// what the whole suite does, in a few seconds.
///
/// With the tests' support of 4b0b584 (Foundation's `Process`, output read by `FileHandle.readabilityHandler`) this
/// process died here, as `swift test` did at random: in libdispatch's `_dispatch_event_loop_drain` (a read source's
/// epoll note used after it was freed, swift-corelibs-libdispatch#949), in `_dispatch_source_refs_finalize_
/// unregistration`, or in `Process.run()`'s `memmove` (its `/proc/self/fd` listing, swift-corelibs-foundation#5472);
/// and a spawn failed with EBADF when another thread closed a descriptor `Process.run()` had listed to close in the
/// child. ``RunningTool`` now runs on ``ChildProcess`` (no Dispatch source, close-on-exec pipes): none of these can
/// happen.
@Suite struct ChildProcessChurnTests {
  @Test func childrenKilledWhileTheirOutputIsReadOnSeveralThreadsAtOnce() async throws {
    let config = makeConfigFolder()
    // Descriptors opened and closed meanwhile, as the library's saves and locks do: 100 per child started, by two
    // threads, while that child starts (paid by the work, not by the time: ``WorkBudget``).
    let budget = WorkBudget()
    for _ in 0..<2 {
      Thread {
        while budget.take() {
          let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
          if descriptor >= 0 { close(descriptor) }
        }
      }.start()
    }
    defer { budget.end() }
    let tasks = 4
    // 100 children per task (400 at the full size), as the thread sanitizer's stage ran it since 2026-12-06: with the
    // support of 4b0b584 the process crashed in 4 runs of 4 at 1,000 per task (5b79358); the crashes came from
    // children ending on several threads at once, which every round does.
    let children = TestSize.pick(100, full: 400)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<tasks {
        group.addTask {
          for round in 0..<children {
            budget.add(100)
            // A line on each output, then it waits on its input: the kill comes while both outputs are being read.
            let child = try RunningTool(["-c", "echo out; echo err >&2; exec cat"], config: config, tool: "/bin/sh")
            #expect(await child.lines.wait(timeout: 30) { !$0.isEmpty }, "task \(task), child \(round)")
            await child.kill(SIGKILL)
          }
        }
      }
      try await group.waitForAll()
    }
  }
}
