import Dispatch
import Foundation
import HistoryChecker
import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What an observer's handler does besides logging, as apps' handlers do: nothing, or take its time (a pause), or
/// read another key of its store, or write one (a new value, logged as an operation of the observer's own thread).
/// Chosen per delivery from the plan's seed and the observer, so a history runs again the same way; deliveries that
/// take a while make changes arrive while a delivery runs, which must then be delivered after it.
enum ObserverHandling {
  /// The thread number an observer's reads and writes are logged under (after any plan thread's).
  static func thread(ofObserver id: Int) -> Int { 1_000 + id }

  /// The most writes one observer's handler makes (a handler that writes a key another observer writes back from
  /// would go on for ever).
  static let writesPerObserver = 2
}

/// The handler work of one observer: its random choices, and the operations it logged.
final class ObserverWork: Sendable {
  private struct State {
    var random: SeededGenerator
    var operations = 0
    var writes = 0
  }

  private let state: Guarded<State>
  private let worker: HistoryWorker
  private let suite: String
  private let key: String
  private let id: Int
  /// The store the handler reads and writes, held weakly: the handler must not keep the thread's store alive.
  private let store: WeakStore

  private final class WeakStore: @unchecked Sendable {  // set once, before any delivery
    weak var store: DefaultsStore?
    init(_ store: DefaultsStore?) { self.store = store }
  }

  /// `store` is nil for a quiet observer: its process must not touch the suite, so its handler only pauses.
  init(worker: HistoryWorker, id: Int, suite: String, key: String, store: DefaultsStore?) {
    state = Guarded(State(random: SeededGenerator(seed: worker.seed &* 1_000_003 &+ UInt64(id))))
    self.worker = worker
    self.suite = suite
    self.key = key
    self.id = id
    self.store = WeakStore(store)
  }

  /// Runs inside a delivery, after it was logged.
  func handle() {
    let choice = state.withLock { state in
      (kind: Int.random(in: 0..<8, using: &state.random), pause: Int.random(in: 0...3_000, using: &state.random))
    }
    switch choice.kind {
    case 0, 1, 2:
      usleep(UInt32(choice.pause))  // the handler's own work, not synchronisation
    case 3, 4:
      if let store = store.store { read(store) }
    case 5:
      // Not the plain writer's suite, which only that process writes (it rewrites the file without the lock).
      if suite != "P", let store = store.store { write(store) }
    default:
      break
    }
  }

  private var otherKey: String { HistoryPlan.keys.first { $0 != key } ?? key }

  private func nextIndex() -> Int {
    state.withLock { state in
      state.operations += 1
      return state.operations - 1
    }
  }

  private func log(_ event: String, _ index: Int, _ operation: String, values: [Int]) {
    worker.log.log(
      HistoryEvent(
        event: event, worker: worker.index, thread: ObserverHandling.thread(ofObserver: id), index: index,
        operation: operation, suite: suite, keys: [otherKey], values: values, ok: event == "done" ? true : nil,
        time: monotonicNow()))
  }

  private func read(_ store: DefaultsStore) {
    let index = nextIndex()
    log("begin", index, "read", values: [])
    let value = store[worker.key(otherKey)]
    log("done", index, "read", values: [value])
  }

  private func write(_ store: DefaultsStore) {
    let allowed = state.withLock { state in
      guard state.writes < ObserverHandling.writesPerObserver else { return false }
      state.writes += 1
      return true
    }
    // Only while the worker's threads run: once they are done, the process saves, and the driver reads the files.
    guard allowed, worker.handlerWrites.begin() else { return }
    defer { worker.handlerWrites.end() }
    let index = nextIndex()
    let value = worker.nextValue()
    log("begin", index, "write", values: [value])
    store[worker.key(otherKey)] = value
    log("done", index, "write", values: [value])
  }
}

/// Writes from observers' handlers, allowed until the worker's threads are done, then waited for.
final class HandlerWrites: Sendable {
  private let state = Guarded(true)
  private let running = DispatchGroup()

  /// Whether a write may begin (then ``end()`` must follow).
  func begin() -> Bool {
    state.withLock { open in
      if open { running.enter() }
      return open
    }
  }

  func end() { running.leave() }

  /// No more writes; returns once those running have ended.
  func close() {
    state.withLock { $0 = false }
    running.wait()
  }
}
