/// One line of a worker's log (JSON), or of the driver's.
package struct HistoryEvent: Codable, Sendable, Equatable {
  /// `begin` / `done` of an operation, `observed` (an observer's delivery), `issue` (a store's issue handler),
  /// `quiet` (all operations done and saved), `converged` (an observer's value once writes stopped), `refreshed`
  /// (an observer's value after `refresh()`), `final` (a read after `refresh()`), `killed` (the driver).
  package var event: String
  package var worker: Int
  /// The worker's thread that ran the operation (the worker's closing saves run on a thread numbered after them).
  package var thread: Int? = nil
  /// The operation's index in its thread's plan.
  package var index: Int? = nil
  package var operation: String? = nil
  /// Suite label (`0`…, `P`).
  package var suite: String? = nil
  package var keys: [String]? = nil
  /// Values written (one per key; -1 removes), or read or observed (-1: absent).
  package var values: [Int]? = nil
  /// Values read inside a transaction before its writes (one per key).
  package var reads: [Int]? = nil
  package var ok: Bool? = nil
  /// Nanoseconds on the monotonic clock every process shares.
  package var time: UInt64
  package var observer: Int? = nil
  /// Whether the observer is a quiet one (``HistoryPlan/make(seed:)``).
  package var quiet: Bool? = nil
  package var message: String? = nil

  package init(
    event: String, worker: Int, thread: Int? = nil, index: Int? = nil, operation: String? = nil, suite: String? = nil,
    keys: [String]? = nil, values: [Int]? = nil, reads: [Int]? = nil, ok: Bool? = nil, time: UInt64,
    observer: Int? = nil, quiet: Bool? = nil, message: String? = nil
  ) {
    self.event = event
    self.worker = worker
    self.thread = thread
    self.index = index
    self.operation = operation
    self.suite = suite
    self.keys = keys
    self.values = values
    self.reads = reads
    self.ok = ok
    self.time = time
    self.observer = observer
    self.quiet = quiet
    self.message = message
  }
}
