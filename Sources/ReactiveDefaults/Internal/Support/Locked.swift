import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `Synchronization.Mutex`, plus the happens-before edges ThreadSanitizer cannot see for itself.
///
/// On Linux, `Mutex` waits with raw futex calls that ThreadSanitizer does not intercept, so every access it
/// guards is reported as a race (measured: a counter incremented by 8 threads under a `Mutex` gives 5 reports
/// per run). When the process runs under ThreadSanitizer, this lock tells it about each acquire and release;
/// otherwise the annotations are a load of a nil function pointer.
///
/// `State` is `Sendable`: handing an `inout sending` state of a generic type on to `body` inside `Mutex.withLock` is
/// rejected by Swift 6.0-6.2's region checker ("Sending '$0' risks causing data races", swiftlang/swift#78904; fixed
/// in 6.3), which Xcode 16.3 and Xcode 26 ship. A Sendable state is never region-checked.
struct Locked<State: Sendable>: ~Copyable, Sendable {
  private let mutex: Mutex<State>

  init(_ initialState: sending State) {
    mutex = Mutex(initialState)
  }

  /// Runs `body` with exclusive access to the state. Never call out to unknown code from `body`.
  borrowing func withLock<Result, Failure: Error>(
    _ body: (inout sending State) throws(Failure) -> sending Result
  ) throws(Failure) -> sending Result {
    guard let acquire = ThreadSanitizer.acquire, let release = ThreadSanitizer.release else {
      // Counted for the lock order check (debug builds), except under the sanitizer, whose own bookkeeping of every
      // lock already slows the suite several times: the plain debug run checks the order.
      LockOrder.taking(.state)
      defer { LockOrder.released(.state) }
      return try mutex.withLock(body)
    }
    // The annotations name this lock's own address: it is address-only (a `Mutex` inside), so stable while the lock
    // lives, and unique. No allocation for it: many observers each hold a lock.
    let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
    return try mutex.withLock { (state: inout sending State) throws(Failure) -> sending Result in
      acquire(address)
      defer { release(address) }
      return try body(&state)
    }
  }
}

/// ThreadSanitizer's annotation entry points, when its runtime is loaded into this process.
enum ThreadSanitizer {
  typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

  static let acquire = lookUp("__tsan_acquire")
  static let release = lookUp("__tsan_release")

  private static func lookUp(_ name: String) -> Annotation? {
    #if canImport(Darwin)
      let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #else
      let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #endif
    guard let symbol = dlsym(everywhere, name) else { return nil }
    return unsafeBitCast(symbol, to: Annotation.self)
  }
}
