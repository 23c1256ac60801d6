#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The order in which a thread takes the library's locks, written down once and checked in debug builds.
///
/// | rank | lock | held |
/// |---|---|---|
/// | 0 `edit` | a hub's ``EditLock`` | through an edit: its body (the caller's code), its reload and its save |
/// | 1 `suiteFile` | a file's lock (``TrackedFile/locked(_:)``: `flock`, shared with other processes) | see below |
/// | 2 `writeGate` | a hub's ``WriteGate`` | through one write into storage, or a `excludingWrites` body |
/// | – | corelibs' own lock | inside `UserDefaults` and `CFPreferences` calls (not the library's to check) |
/// | 3 `state` | every ``Locked`` | for a few instructions; the body calls nothing that takes a lock of rank 0–2 |
///
/// The file lock (rank 1) is held through a save, an edit, a reload or an import.
///
/// A thread holding a lock may take another of the same rank or a later one, never an earlier one: a save that held
/// the write gate and then waited for the file lock would deadlock with an edit, which holds the file lock and then
/// waits for the gate. (One exception: an edit's body, the caller's code, runs holding the suite's file lock and write
/// gate, which are not counted meanwhile, and may write, save or edit another suite.) Observers and issue handlers never run under a state lock (``assertNoneHeld(_:ranks:)``):
/// they are the caller's code, which may write, save or edit.
///
/// Each thread's held locks are counted per rank in one pointer-sized thread-specific value (four 8-bit counts, so
/// that it fits 32-bit words too): no allocation, and nothing at all in release builds.
enum LockOrder {
  enum Rank: Int, CustomStringConvertible {
    case edit = 0
    case suiteFile = 1
    case writeGate = 2
    case state = 3

    var description: String {
      switch self {
      case .edit: "a suite's edit lock"
      case .suiteFile: "a suite's file lock"
      case .writeGate: "a hub's write gate"
      case .state: "a state lock"
      }
    }
  }

  #if DEBUG
    private static let key: pthread_key_t = {
      var key = pthread_key_t()
      precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key for the lock order check")
      return key
    }()

    private static var counts: Held {
      get { Held(bits: UInt(bitPattern: pthread_getspecific(key))) }
      set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue.bits)) }
    }
  #endif

  /// The locks one thread holds: an 8-bit count per rank.
  struct Held: Equatable {
    var bits: UInt = 0

    func count(_ rank: Rank) -> UInt {
      (bits >> (UInt(rank.rawValue) * 8)) & 0xFF
    }

    mutating func add(_ rank: Rank) {
      assert(count(rank) < 0xFF, "lock order: \(rank) nested more than 254 deep")
      bits &+= 1 << (UInt(rank.rawValue) * 8)
    }

    mutating func remove(_ rank: Rank) { bits &-= 1 << (UInt(rank.rawValue) * 8) }

    /// The lock held that forbids taking one of `rank` (a later rank), or nil.
    func forbidding(_ rank: Rank) -> Rank? {
      for later in stride(from: rank.rawValue + 1, through: Rank.state.rawValue, by: 1) {
        let laterRank = Rank(rawValue: later)!
        // An edit's body is the caller's code, run holding the suite's file lock: it may edit another suite.
        if rank == .edit && laterRank == .suiteFile { continue }
        if count(laterRank) > 0 { return laterRank }
      }
      return nil
    }
  }

  /// The calling thread takes a lock of `rank` (call it before waiting for the lock): a debug build stops here when
  /// the thread holds a lock of a later rank.
  @inline(__always)
  static func taking(_ rank: Rank) {
    #if DEBUG
      var held = counts
      if let later = held.forbidding(rank) {
        assertionFailure("lock order: \(rank) taken while holding \(later) (see LockOrder)")
      }
      held.add(rank)
      counts = held
    #endif
  }

  /// The calling thread released a lock of `rank` that it took with ``taking(_:)``.
  @inline(__always)
  static func released(_ rank: Rank) {
    #if DEBUG
      var held = counts
      assert(held.count(rank) > 0, "lock order: \(rank) released but not held")
      held.remove(rank)
      counts = held
    #endif
  }

  /// A debug build stops here when the calling thread holds a lock that the caller's code must not run under: any of
  /// the ranks in `ranks` (by default the state locks. The others are held over the caller's code by design: an
  /// edit's body runs under its edit and file locks; Apple calls an app's key-value observers inside
  /// `UserDefaults.set`, under the write gate, and what they do there, writes included, runs under it too.)
  @inline(__always)
  static func assertNoneHeld(_ what: @autoclosure () -> String, ranks: [Rank] = [.state]) {
    #if DEBUG
      let held = counts
      for rank in ranks where held.count(rank) > 0 {
        assertionFailure("lock order: \(what()) runs while holding \(rank) (see LockOrder)")
      }
    #endif
  }

  /// What the calling thread holds (debug builds; empty in release builds).
  static var held: Held {
    #if DEBUG
      counts
    #else
      Held()
    #endif
  }
}
