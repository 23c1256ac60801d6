#if canImport(Darwin)
  import Darwin

  func currentThreadID() -> UInt { UInt(bitPattern: pthread_self()) }

  /// Whether the calling thread is the process's main thread, where the main actor runs.
  func isMainThread() -> Bool { pthread_main_np() != 0 }
#else
  import Dispatch

  #if canImport(Glibc)
    import Glibc

    func currentThreadID() -> UInt { UInt(pthread_self()) }
  #elseif canImport(Musl)
    import Musl

    func currentThreadID() -> UInt { UInt(bitPattern: pthread_self()) }
  #endif

  /// Whether the calling code runs on the main actor's thread: inside a block of the main queue (the main actor's
  /// executor), or on the process's main thread (its thread id is the process id). On Linux the two differ once
  /// `dispatchMain()` runs (an `async` main, a test runner): the main thread exits, and the main queue, with the main
  /// actor, runs on a thread of Dispatch's. (Foundation's `Thread.isMainThread` is neither: on Linux it takes the
  /// thread that first used CoreFoundation for the main thread.) `gettid` is looked up: Swift's Glibc module does not
  /// declare it.
  func isMainThread() -> Bool {
    if DispatchQueue.getSpecific(key: MainQueue.key.key) == true { return true }
    guard let gettid = ThreadID.gettid else { return false }
    return gettid.call() == getpid()
  }

  /// A mark on the main queue, which blocks running on it can read.
  private enum MainQueue {
    struct Key: @unchecked Sendable {  // set once, then only read
      let key = DispatchSpecificKey<Bool>()
    }

    static let key: Key = {
      let key = Key()
      DispatchQueue.main.setSpecific(key: key.key, value: true)
      return key
    }()
  }

  private enum ThreadID {
    struct Function: @unchecked Sendable {  // an immutable pointer to a C function
      let call: @convention(c) () -> pid_t
    }

    static let gettid: Function? = {
      #if os(Linux)
        guard let symbol = dlsym(nil, "gettid") else { return nil }  // nil: RTLD_DEFAULT, on Linux
        return Function(call: unsafeBitCast(symbol, to: (@convention(c) () -> pid_t).self))
      #else
        return nil
      #endif
    }()
  }
#endif

#if canImport(CDispatch)
  import CDispatch  // `timespec`'s members come through it on Linux (see FileSystem.swift)
#endif
#if canImport(CoreFoundation)
  import CoreFoundation
#endif

/// The monotonic clock in nanoseconds, read directly (`DispatchTime.now()` costs a conversion more, and a read of a
/// store asks for it each time: ``SuitePersistence/followFile()``).
func monotonicNanoseconds() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// The wall clock in nanoseconds since 1970, as file systems stamp modification times.
func realtimeNanoseconds() -> Int64 {
  var time = timespec()
  clock_gettime(CLOCK_REALTIME, &time)
  return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
}
