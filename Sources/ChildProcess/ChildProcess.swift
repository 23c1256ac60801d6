public import Dispatch
public import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A child process for the tool, the tests and the test helper, started with `posix_spawn`, its output read by
/// blocking reads on threads of its own and its exit awaited (`waitid`, then `waitpid`) on another.
///
/// Not Foundation's `Process` with `FileHandle.readabilityHandler`, because on Linux (corelibs Foundation and
/// libdispatch of Swift 6.3) both fail at random when several threads start and end children at once:
/// - a `readabilityHandler` is a libdispatch read source, and libdispatch's epoll bookkeeping is corrupted when such
///   sources are created and torn down from several threads (swift-corelibs-libdispatch#949): the process dies in
///   `_dispatch_event_loop_drain` or `_dispatch_source_refs_finalize_unregistration`;
/// - `Process.run()` lists `/proc/self/fd` to close every descriptor in the child, so a descriptor another thread
///   closes meanwhile makes the spawn fail with EBADF, and its listing reads past the end of `readdir`'s buffer
///   (swift-corelibs-foundation#5472, fixed after 6.3), which crashes in `memmove`.
/// Here no Dispatch source exists, and the pipes are made close-on-exec, so no other child inherits them.
public final class ChildProcess: Sendable {
  /// Why a child could not be started.
  public struct Failure: Error, CustomStringConvertible {
    /// The call that failed.
    public var operation: String
    /// Its `errno`-style code.
    public var code: Int32
    /// The call and its error, in words.
    public var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
  }

  /// The child's process ID (a `pid_t`).
  public let processIdentifier: Int32

  private struct State {
    /// The raw `waitpid` status, once the child has exited and its output has been read to the end.
    var status: Int32?
    /// True from the moment the child has exited (not yet reaped): no signal is sent after it, to no recycled pid.
    var exited = false
  }
  /// What the waiting thread shares with this object; not the object itself, which ends (closing the child's input)
  /// when its owner releases it, whether or not the child still runs.
  private final class Shared: Sendable {
    let state = Guarded(State())
    /// The write end of the child's input; a lock of its own, so that a write blocked on a full pipe holds back no
    /// signal and no look at the status.
    let input: Guarded<Int32?>
    let ended = DispatchSemaphore(value: 0)
    init(input: Int32?) { self.input = Guarded(input) }
  }
  private let shared: Shared

  /// Starts `executable` (an absolute path) with `arguments` and exactly `environment`.
  ///
  /// Each output goes to its handler (called on a reading thread of its own with each chunk as it comes, and once with
  /// empty bytes at the end), or to `/dev/null` without one. With `input`, the child reads what ``send(_:)`` writes
  /// until ``closeInput()``; without, it reads `/dev/null`. With `ownProcessGroup` the child leads a process group of
  /// its own (a test can kill it and its children together); without, it stays in this process's group and dies with
  /// it when the group is killed. `onExit` is
  /// called once, with ``terminationStatus``, after the child exited and its output has been handled to the end.
  public init(
    executable: String, arguments: [String], environment: [String: String], ownProcessGroup: Bool = true,
    input: Bool = false,
    output: (@Sendable (Data) -> Void)? = nil, error: (@Sendable (Data) -> Void)? = nil,
    onExit: (@Sendable (Int32) -> Void)? = nil
  ) throws(Failure) {
    _ = Self.brokenPipesAreErrors
    var made: [Int32] = []
    func makePipe() throws(Failure) -> (read: Int32, write: Int32) {
      var ends: [Int32] = [-1, -1]
      // Glibc's module has no `pipe2`: the ends are made close-on-exec under a lock that every spawn here takes too,
      // so no other child of this process can inherit them (and hold a pipe open after its own child ended).
      let failure = ChildProcess.spawning.withLock { () -> Int32 in
        guard pipe(&ends) == 0 else { return errno }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return 0
      }
      guard failure == 0 else {
        for descriptor in made { close(descriptor) }
        throw Failure(operation: "pipe", code: failure)
      }
      made += ends
      return (ends[0], ends[1])
    }
    let inputPipe = input ? try makePipe() : nil
    let outputPipe = output == nil ? nil : try makePipe()
    let errorPipe = error == nil ? nil : try makePipe()

    let spawned = Self.spawn(
      executable, arguments: arguments, environment: environment, ownProcessGroup: ownProcessGroup,
      descriptors: [inputPipe?.read, outputPipe?.write, errorPipe?.write])
    // The child's ends are the child's alone now (or nobody's, when the spawn failed).
    for end in [inputPipe?.read, outputPipe?.write, errorPipe?.write] { if let end { close(end) } }
    let pid: Int32
    switch spawned {
    case .success(let spawnedPID): pid = spawnedPID
    case .failure(let failure):
      for end in [inputPipe?.write, outputPipe?.read, errorPipe?.read] { if let end { close(end) } }
      throw failure
    }
    processIdentifier = pid
    let shared = Shared(input: inputPipe?.write)
    self.shared = shared

    var readers: [DispatchSemaphore] = []
    for (descriptor, handler) in [(outputPipe?.read, output), (errorPipe?.read, error)] {
      guard let descriptor, let handler else { continue }
      let done = DispatchSemaphore(value: 0)
      readers.append(done)
      Self.start {
        Self.readToEnd(descriptor, handler)
        done.signal()
      }
    }
    let readersDone = readers
    Self.start {
      let status = Self.reap(pid, shared)
      // A grandchild that inherited an output (none of the tests' children makes one) would hold it open: the exit is
      // told after at most 10 s more, read to the end or not.
      let limit = DispatchTime.now() + .seconds(10)
      for done in readersDone { _ = done.wait(timeout: limit) }
      shared.state.withLock { $0.status = status }
      shared.ended.signal()
      onExit?(Self.terminationStatus(of: status))
    }
  }

  /// Writes `data` to the child's input; false when the input is closed or the child stopped reading.
  @discardableResult
  public func send(_ data: Data) -> Bool {
    let bytes = [UInt8](data)
    // Under the input's lock, so that no close (and reuse of the descriptor number) can come between.
    return shared.input.withLock { input -> Bool in
      guard let descriptor = input else { return false }
      var written = 0
      while written < bytes.count {
        let result = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
        if result < 0 && errno == EINTR { continue }
        guard result > 0 else { return false }
        written += result
      }
      return true
    }
  }

  /// Closes the child's input: it reads end of file.
  public func closeInput() {
    shared.input.withLock { input in
      if let descriptor = input { close(descriptor) }
      input = nil
    }
  }

  /// Sends `signalNumber` to the child unless it has exited already (a pid is reused once reaped).
  public func signal(_ signalNumber: Int32) {
    shared.state.withLock { state in
      if !state.exited { _ = kill(processIdentifier, signalNumber) }
    }
  }

  /// Sends `signalNumber` to the child's process group (it leads one: `ownProcessGroup`) unless the child has exited
  /// already: the group's number is not reused while its leader is not reaped.
  public func signalGroup(_ signalNumber: Int32) {
    shared.state.withLock { state in
      if !state.exited { _ = kill(-processIdentifier, signalNumber) }
    }
  }

  /// Runs `executable` to the end with `input` (nil: none); its status and both outputs.
  public static func run(
    executable: String, arguments: [String], environment: [String: String], input: Data? = nil
  ) throws(Failure) -> (status: Int32, output: Data, error: Data) {
    let output = Guarded(Data())
    let error = Guarded(Data())
    let child = try ChildProcess(
      executable: executable, arguments: arguments, environment: environment, input: input != nil,
      output: { data in output.withLock { $0.append(data) } }, error: { data in error.withLock { $0.append(data) } })
    if let input { child.send(input) }
    let status = child.waitUntilExit()
    return (status, output.withLock { $0 }, error.withLock { $0 })
  }

  /// Sends SIGTERM.
  public func terminate() { signal(SIGTERM) }

  /// False once the child has exited and its output has been handled.
  public var isRunning: Bool { shared.state.withLock { $0.status == nil } }

  /// The exit code, or the number of the signal that ended the child; -1 while it runs.
  public var terminationStatus: Int32 { shared.state.withLock { $0.status }.map(Self.terminationStatus(of:)) ?? -1 }

  /// True when the child was ended by a signal.
  public var wasSignalled: Bool { shared.state.withLock { $0.status }.map { $0 & 0x7f != 0 } ?? false }

  /// Blocks until the child has exited and its output has been handled; false if `deadline` passes first.
  public func waitForExit(deadline: DispatchTime = .distantFuture) -> Bool {
    guard shared.ended.wait(timeout: deadline) == .success else { return false }
    shared.ended.signal()  // for the next waiter
    return true
  }

  /// Closes the input and waits for the child to end; the status.
  public func waitUntilExit() -> Int32 {
    closeInput()
    _ = waitForExit()
    return terminationStatus
  }

  deinit {
    closeInput()
  }

  // MARK: Spawning

  private static func spawn(
    _ executable: String, arguments: [String], environment: [String: String], ownProcessGroup: Bool,
    descriptors: [Int32?]
  ) -> Result<Int32, Failure> {
    #if canImport(Darwin)
      var actions: posix_spawn_file_actions_t? = nil
      var attributes: posix_spawnattr_t? = nil
    #else
      var actions = posix_spawn_file_actions_t()
      var attributes = posix_spawnattr_t()
    #endif
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    for (target, descriptor) in descriptors.enumerated() {
      let result =
        if let descriptor {
          posix_spawn_file_actions_adddup2(&actions, descriptor, Int32(target))
        } else {
          posix_spawn_file_actions_addopen(&actions, Int32(target), "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        }
      guard result == 0 else { return .failure(Failure(operation: "posix_spawn_file_actions", code: result)) }
    }
    // No blocked signals, every signal's default action (this process ignores SIGPIPE); on Apple platforms no
    // descriptor but the three (Linux has close-on-exec pipes, see above).
    var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
    if ownProcessGroup { flags |= Int32(POSIX_SPAWN_SETPGROUP) }
    #if canImport(Darwin)
      flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
    #endif
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    sigdelset(&all, SIGKILL)
    sigdelset(&all, SIGSTOP)
    posix_spawnattr_setflags(&attributes, Int16(flags))
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for string in argv + envp { free(string) } }
    var pid: Int32 = 0
    let result = ChildProcess.spawning.withLock {
      posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    }
    guard result == 0 else { return .failure(Failure(operation: "posix_spawn \(executable)", code: result)) }
    return .success(pid)
  }

  /// Waits for the child's exit, marks it exited before reaping it (so ``signal(_:)`` never reaches a recycled pid),
  /// then reaps it; the raw status.
  /// A status nobody could read (`waitpid` failed) counts as an end by signal 127, never as a clean exit.
  private static func reap(_ pid: Int32, _ shared: Shared) -> Int32 {
    var information = siginfo_t()
    while waitid(P_PID, id_t(pid), &information, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
    shared.state.withLock { $0.exited = true }
    var status: Int32 = 0
    while true {
      let reaped = waitpid(pid, &status, 0)
      if reaped == pid { return status }
      if reaped < 0 && errno == EINTR { continue }
      return 0x7f
    }
  }

  private static func terminationStatus(of status: Int32) -> Int32 {
    status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
  }

  private static func readToEnd(_ descriptor: Int32, _ handler: @Sendable (Data) -> Void) {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      handler(Data(buffer[..<count]))
    }
    close(descriptor)
    handler(Data())
  }

  /// A thread of its own: not Dispatch's, whose few threads the tests' tasks and the library's work share.
  private static func start(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = "ChildProcess"
    thread.start()
  }

  /// Held from a pipe's creation until its ends are close-on-exec, and around each spawn.
  private static let spawning = NSLock()

  /// A write to a child that stopped reading fails with EPIPE instead of killing this process.
  private static let brokenPipesAreErrors: Void = {
    #if canImport(Glibc)
      _ = Glibc.signal(SIGPIPE, SIG_IGN)
    #elseif canImport(Musl)
      _ = Musl.signal(SIGPIPE, SIG_IGN)
    #elseif canImport(Darwin)
      _ = Darwin.signal(SIGPIPE, SIG_IGN)
    #endif
  }()
}

/// A value behind an `NSLock`: not `Synchronization.Mutex`, whose futex waits ThreadSanitizer does not see on Linux
/// (every access it guards reads as a race in the sanitizer run).
final class Guarded<Value>: @unchecked Sendable {  // `value` is only touched under `lock`
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
