import Foundation
import Synchronization
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
    let stopped = Atomic<Bool>(false)
    // Descriptors opened and closed meanwhile, as the library's saves and locks do: tens of thousands a second,
    // with a pause of 50 µs between them (without it, the two threads took both cores of the machine from the rest
    // of the suite for the whole test, which ran for minutes beside it).
    for _ in 0..<2 {
      Thread {
        while !stopped.load(ordering: .relaxed) {
          let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
          if descriptor >= 0 { close(descriptor) }
          usleep(50)
        }
      }.start()
    }
    defer { stopped.store(true, ordering: .relaxed) }
    let tasks = 4
    let children = ProcessInfo.processInfo.environment["STRESS_OPERATIONS"] == nil ? 400 : 100
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<tasks {
        group.addTask {
          for round in 0..<children {
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
