// The plan of one randomized multi-process history: which worker processes run which operations, on which of their
// threads, over which suites, and which worker is killed when. Made from a seed, so that any history can be run again.

/// One history to run: library workers (processes of several threads), an optional plain writer, and kills.
package struct HistoryPlan: Codable, Sendable, Equatable {
  /// A worker killed with `SIGKILL` once its thread `thread` has begun operation `afterOperation`,
  /// `delayMicroseconds` later.
  package struct Kill: Codable, Sendable, Equatable {
    package var worker: Int
    package var thread: Int
    package var afterOperation: Int
    package var delayMicroseconds: Int
  }

  package var seed: UInt64
  /// The checked suites, labelled `0`, `1`, … (the plain writer's suite is `P`).
  package var suites: Int
  /// Each library worker's threads, each a list of operations run one after another (see the worker), all threads of
  /// a worker at once.
  package var workers: [[[String]]]
  /// The plain writer's operations (`plain KEY`, `pause N`), or none.
  package var plainWriter: [String]
  package var kills: [Kill]
  /// What the plan exercises (nil, in plans written before kinds existed: ``Kind/standard``).
  package var kind: Kind? = nil

  /// The kinds of plans a seed can make (``make(seed:kind:)``).
  package enum Kind: String, Codable, Sendable, CaseIterable {
    /// Library workers over suites or file stores, a plain writer process, tools, kills.
    case standard
    /// The standard plan, with threads of the workers also writing and removing keys of the checked suites through
    /// plain `UserDefaults` instances in their own process (`pset`, `premove`).
    case plainThreads
    /// One suite: in each worker, a thread that runs `update` on a key in a loop beside threads that write it through
    /// the library and read it, and write and read another key through plain `UserDefaults` and the library.
    case updateMix
  }

  /// The keys every suite uses.
  package static let keys = ["k0", "k1", "k2"]

  /// The targets the workers' threads use besides the checked suites, to keep the process busy the way an app is
  /// (stores opened and released, observers added and removed, watches of several folders starting and ending):
  /// `x0` and `x1` are suites in the preferences folder, `y0` a file store in the folder of the checked file stores
  /// `0` and `2`, `y1` a file store in a folder no checked store uses. Nothing of them is checked.
  package static let sideTargets = ["x0", "x1", "y0", "y1"]

  /// The suite names, by label: `0`, `1`, `2` for the checked suites, `P` for the plain writer's, `x0` … for the
  /// side targets.
  package static func suiteName(_ label: String) -> String {
    if label == "P" { return "plain" }
    if label.hasPrefix("x") || label.hasPrefix("y") { return "side-" + label }
    return "s" + label
  }

  /// Where a label's file store lives, below the history's folder `root`: the checked ones in two folders (`0` and
  /// `2` in `a`, `1` in `b`), the plain writer's in `root`, the side file stores in `a` and `c`.
  package static func filePath(_ label: String, root: String) -> String {
    let folder: String
    switch label {
    case "P": folder = root
    case "y0": folder = root + "/a"
    case "y1": folder = root + "/c"
    default: folder = root + ((Int(label) ?? 0) % 2 == 0 ? "/a" : "/b")
    }
    return folder + "/" + suiteName(label) + ".plist"
  }

  /// Whether a label is a side target (``sideTargets``), kept a suite or a file store whatever the history's kind.
  package static func isSideTarget(_ label: String) -> Bool { sideTargets.contains(label) }

  /// Whether a side target is a file store (else a suite).
  package static func isSideFileStore(_ label: String) -> Bool { label.hasPrefix("y") }

  package var operationCount: Int {
    workers.reduce(plainWriter.count) { total, threads in threads.reduce(total) { $0 + $1.count } }
  }

  /// The plan a seed makes: 2–4 library workers of 2–4 threads each over 1–3 suites, 8–20 operations a thread, half
  /// the time a plain writer, and a kill in about a third of the histories. In about half the workers one thread ends
  /// with a quiet observer: an observer of a suite that no other thread of that process touches, registered, then
  /// left alone (no read, no refresh, no save) until the history ends; only the watch of the suite's file can tell it.
  package static func make(seed: UInt64, kind: Kind = .standard) -> HistoryPlan {
    if kind == .updateMix { return makeUpdateMix(seed: seed) }
    var random = SeededGenerator(seed: seed)
    let suites = Int.random(in: 1...3, using: &random)
    let workerCount = Int.random(in: 2...4, using: &random)
    let plain = Bool.random(using: &random)
    func key() -> String { keys.randomElement(using: &random)! }
    func twoKeys() -> String {
      let first = keys.randomElement(using: &random)!
      let second = keys.filter { $0 != first }.randomElement(using: &random)!
      return first + " " + second
    }
    func side() -> String { sideTargets.randomElement(using: &random)! }
    var workers: [[[String]]] = []
    for _ in 0..<workerCount {
      let threadCount = Int.random(in: 2...4, using: &random)
      // The quiet observer's suite: no operation of this worker opens a store of it (another process's tool may
      // write it, as may the other workers).
      let quiet = Bool.random(using: &random) ? Int.random(in: 0..<suites, using: &random) : nil
      let usable = (0..<suites).filter { $0 != quiet }.map(String.init)
      // A store operation on a suite this worker may use, else on a side target.
      func suite(_ make: (String) -> String) -> String {
        guard let label = usable.randomElement(using: &random) else { return "busy \(side())" }
        return make(label)
      }
      func anySuite() -> String { "\(Int.random(in: 0..<suites, using: &random))" }
      func readable(_ make: (String) -> String) -> String {
        plain && Int.random(in: 0..<4, using: &random) == 0 ? make("P") : suite(make)
      }
      // Plain `UserDefaults` writes of the checked suites, in this process (none in a standard plan, whose draws stay
      // as they were).
      let plainThreads: [(Int, () -> String)] =
        kind == .plainThreads
        ? [(12, { suite { "pset \($0) \(key())" } }), (4, { suite { "premove \($0) \(key())" } })] : []
      let base: [(Int, () -> String)] = [
        (20, { suite { "write \($0) \(key())" } }),
        (4, { suite { "remove \($0) \(key())" } }),
        (20, { readable { "read \($0) \(key())" } }),
        (5, { suite { "update \($0) \(key())" } }),
        (4, { suite { "edit \($0) \(twoKeys())" } }),
        (10, { suite { "flush \($0)" } }),
        (5, { readable { "refresh \($0)" } }),
        (6, { readable { "observe \($0) \(key())" } }),
        (3, { readable { "cancel \($0) \(key())" } }),
        (4, { readable { "open \($0)" } }),
        (3, { readable { "release \($0)" } }),
        (8, { "busy \(side())" }),
        (3, { "toolwrite \(anySuite()) \(key())" }),
        (1, { "tooldelete \(anySuite())" }),
        (1, { "toolimport \(anySuite()) \(twoKeys())" }),
        (1, { "unlink \(anySuite())" }),
        (10, { "pause \(Int.random(in: 0...3000, using: &random))" }),
      ]
      let weighted = plainThreads + base
      let total = weighted.reduce(0) { $0 + $1.0 }
      func operation() -> String {
        var pick = Int.random(in: 0..<total, using: &random)
        for (weight, make) in weighted {
          if pick < weight { return make() }
          pick -= weight
        }
        return "pause 0"
      }
      var threads: [[String]] = []
      for _ in 0..<threadCount {
        var operations: [String] = []
        // Half the threads open a store first, perhaps before any file exists; the others open on first use.
        if Bool.random(using: &random) { operations.append(suite { "open \($0)" }) }
        for _ in 0..<Int.random(in: 8...20, using: &random) { operations.append(operation()) }
        threads.append(operations)
      }
      if let quiet {
        let thread = Int.random(in: 0..<threadCount, using: &random)
        // Anywhere in the thread's run, then nothing more from that thread. Half the time the thread first writes
        // the suite and drops its store: the observer then comes to a new hub of the suite while the dropped one's
        // writes are saved in the background.
        let cut = Int.random(in: 0...threads[thread].count, using: &random)
        let handOff = Bool.random(using: &random) ? ["write \(quiet) \(key())", "release \(quiet)"] : []
        threads[thread] = Array(threads[thread].prefix(cut)) + handOff + ["quiet \(quiet) \(key())"]
      }
      workers.append(threads)
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
      let thread = Int.random(in: 0..<workers[worker].count, using: &random)
      // An operation the worker logs (pauses are not logged, so the driver could not tell when one begins).
      let logged = workers[worker][thread].indices.filter { !workers[worker][thread][$0].hasPrefix("pause") }
      if let operation = logged.randomElement(using: &random) {
        kills.append(
          Kill(
            worker: worker, thread: thread, afterOperation: operation,
            delayMicroseconds: Int.random(in: 0...2000, using: &random)))
      }
    }
    return HistoryPlan(
      seed: seed, suites: suites, workers: workers, plainWriter: plainWriter, kills: kills,
      kind: kind == .standard ? nil : kind)
  }

  /// An ``Kind/updateMix`` plan: 1–2 workers over suite `0`, each with an updating thread, a writing thread and a
  /// mixed one, on two contested keys, 10–25 operations a thread. No kill, no plain
  /// writer process, no tool: every anomaly is the library's, in one process.
  static func makeUpdateMix(seed: UInt64) -> HistoryPlan {
    var random = SeededGenerator(seed: seed)
    func pick(_ weighted: [(Int, String)]) -> String {
      var choice = Int.random(in: 0..<weighted.reduce(0) { $0 + $1.0 }, using: &random)
      for (weight, line) in weighted {
        if choice < weight { return line }
        choice -= weight
      }
      return "pause 0"
    }
    func pause() -> String { "pause \(Int.random(in: 0...500, using: &random))" }
    // `k0` is contested by `update` and the library's plain writes; `k1` by plain `UserDefaults` writes and the
    // library's, read on every thread (no transaction writes it: a plain `UserDefaults` write made while an edit's
    // body runs is overwritten, as the Transactions article says).
    let threadKinds: [[(Int, String)]] = [
      [(8, "update 0 k0"), (1, "read 0 k0"), (1, "read 0 k1")],
      [(4, "write 0 k0"), (3, "pset 0 k1"), (1, "premove 0 k1"), (2, "read 0 k0"), (1, "remove 0 k0")],
      [(2, "update 0 k0"), (2, "write 0 k1"), (2, "read 0 k1"), (1, "flush 0"), (1, "write 0 k0"), (1, "read 0 k0")],
    ]
    var workers: [[[String]]] = []
    for _ in 0..<Int.random(in: 1...2, using: &random) {
      var threads: [[String]] = []
      for weighted in threadKinds {
        var operations = ["open 0"]
        for _ in 0..<Int.random(in: 10...25, using: &random) {
          operations.append(pick(weighted))
          if Int.random(in: 0..<4, using: &random) == 0 { operations.append(pause()) }
        }
        threads.append(operations)
      }
      workers.append(threads)
    }
    return HistoryPlan(seed: seed, suites: 1, workers: workers, plainWriter: [], kills: [], kind: .updateMix)
  }
}
