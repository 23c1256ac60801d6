// The plan of one randomized multi-process history: which worker processes run which operations over which suites,
// and which worker is killed when. Made from a seed, so that any history can be run again.

/// SplitMix64: small, fast and the same on every platform, so a seed names one plan everywhere.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var state: UInt64

  package init(seed: UInt64) { state = seed }

  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// One history to run: library workers, an optional plain `UserDefaults` writer, and kills.
package struct HistoryPlan: Codable, Sendable, Equatable {
  /// A worker killed with `SIGKILL` once it has begun operation `afterOperation`, `delayMicroseconds` later.
  package struct Kill: Codable, Sendable, Equatable {
    package var worker: Int
    package var afterOperation: Int
    package var delayMicroseconds: Int
  }

  package var seed: UInt64
  /// The library suites, named `s0`, `s1`, … (the plain writer's suite is `plain`, label `P`).
  package var suites: Int
  /// Each library worker's operations, one per line (see ``Operation``).
  package var workers: [[String]]
  /// The plain writer's operations (`plain KEY`, `pause N`), or none.
  package var plainWriter: [String]
  package var kills: [Kill]

  /// The keys every suite uses.
  package static let keys = ["k0", "k1", "k2"]

  /// The suite names, by label: `0`, `1`, `2` for the library's suites, `P` for the plain writer's.
  package static func suiteName(_ label: String) -> String { label == "P" ? "plain" : "s" + label }

  package var operationCount: Int { workers.reduce(plainWriter.count) { $0 + $1.count } }

  /// The plan a seed makes: 2–4 library workers over 1–3 suites, 15–40 operations each, half the time a plain
  /// writer, and a kill in about a third of the histories.
  package static func make(seed: UInt64) -> HistoryPlan {
    var random = SeededGenerator(seed: seed)
    let suites = Int.random(in: 1...3, using: &random)
    let workerCount = Int.random(in: 2...4, using: &random)
    let plain = Bool.random(using: &random)
    func suite() -> String { "\(Int.random(in: 0..<suites, using: &random))" }
    func readableSuite() -> String { plain && Int.random(in: 0..<4, using: &random) == 0 ? "P" : suite() }
    func key() -> String { keys.randomElement(using: &random)! }
    func twoKeys() -> String {
      let first = keys.randomElement(using: &random)!
      let second = keys.filter { $0 != first }.randomElement(using: &random)!
      return first + " " + second
    }
    let weighted: [(Int, () -> String)] = [
      (20, { "write \(suite()) \(key())" }),
      (4, { "remove \(suite()) \(key())" }),
      (20, { "read \(readableSuite()) \(key())" }),
      (5, { "update \(suite()) \(key())" }),
      (4, { "edit \(suite()) \(twoKeys())" }),
      (10, { "flush \(suite())" }),
      (5, { "refresh \(readableSuite())" }),
      (6, { "observe \(readableSuite()) \(key())" }),
      (3, { "cancel \(readableSuite()) \(key())" }),
      (4, { "open \(readableSuite())" }),
      (3, { "toolwrite \(suite()) \(key())" }),
      (1, { "tooldelete \(suite())" }),
      (1, { "toolimport \(suite()) \(twoKeys())" }),
      (1, { "unlink \(suite())" }),
      (10, { "pause \(Int.random(in: 0...3000, using: &random))" }),
    ]
    let total = weighted.reduce(0) { $0 + $1.0 }
    func operation() -> String {
      var pick = Int.random(in: 0..<total, using: &random)
      for (weight, make) in weighted {
        if pick < weight { return make() }
        pick -= weight
      }
      return "pause 0"
    }
    var workers: [[String]] = []
    for _ in 0..<workerCount {
      var operations: [String] = []
      // Half the workers open a store first, perhaps before any file exists; the others open on first use.
      if Bool.random(using: &random) { operations.append("open \(suite())") }
      for _ in 0..<Int.random(in: 15...40, using: &random) { operations.append(operation()) }
      workers.append(operations)
    }
    var plainWriter: [String] = []
    if plain {
      for _ in 0..<Int.random(in: 5...15, using: &random) {
        plainWriter.append("plain \(key())")
        plainWriter.append("pause \(Int.random(in: 0...5000, using: &random))")
      }
    }
    var kills: [Kill] = []
    if Int.random(in: 0..<3, using: &random) == 0 {
      let worker = Int.random(in: 0..<workerCount, using: &random)
      kills.append(
        Kill(
          worker: worker, afterOperation: Int.random(in: 0..<workers[worker].count, using: &random),
          delayMicroseconds: Int.random(in: 0...2000, using: &random)))
    }
    return HistoryPlan(seed: seed, suites: suites, workers: workers, plainWriter: plainWriter, kills: kills)
  }
}

/// One line of a worker's log (JSON), or of the driver's.
package struct HistoryEvent: Codable, Sendable, Equatable {
  /// `begin` / `done` of an operation, `observed` (an observer's delivery), `issue` (a store's issue handler),
  /// `quiet` (all operations done and saved), `converged` (an observer's value once writes stopped), `refreshed`
  /// (an observer's value after `refresh()`), `final` (a read after `refresh()`), `killed` (the driver).
  package var event: String
  package var worker: Int
  /// The operation's index in the worker's plan.
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
  package var message: String? = nil

  package init(
    event: String, worker: Int, index: Int? = nil, operation: String? = nil, suite: String? = nil,
    keys: [String]? = nil, values: [Int]? = nil, reads: [Int]? = nil, ok: Bool? = nil, time: UInt64,
    observer: Int? = nil, message: String? = nil
  ) {
    self.event = event
    self.worker = worker
    self.index = index
    self.operation = operation
    self.suite = suite
    self.keys = keys
    self.values = values
    self.reads = reads
    self.ok = ok
    self.time = time
    self.observer = observer
    self.message = message
  }
}
