import Foundation
import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// How the costs grow with the size of the suite, and what a new process pays to open one.
enum Growth {
  /// A suite of `keys` integer keys, saved, for a scenario to open.
  static func prepareSuite(keys: Int) -> String {
    let suite = scratchSuite("size\(keys)")
    let plain = UserDefaults(suiteName: suite)!
    var entries: [String: Any] = [:]
    for index in 0..<keys { entries["k\(index)"] = index }
    plain.setPersistentDomain(entries, forName: suite)
    plain.synchronize()
    return suite
  }

  /// Writes of one observed key, continuing across several coalesced saves, in a 10,000-key suite ÷ in a
  /// 100-key suite: a save must not stall the writers in proportion to the suite's size.
  static func writeGrowth(_ settings: Settings) -> Comparison {
    let small = prepareSuite(keys: 100)
    let large = prepareSuite(keys: 10_000)
    defer {
      cleanUp(small)
      cleanUp(large)
    }
    return writeGrowth(small: DefaultsStore(suiteName: small)!, large: DefaultsStore(suiteName: large)!, settings)
  }

  /// Writes of one observed key in `large` ÷ in `small`, continuing across coalesced saves (suites or file stores).
  static func writeGrowth(small: DefaultsStore, large: DefaultsStore, _ settings: Settings) -> Comparison {
    let stores = [small, large]
    let key = DefaultsKey<Int>("observed", default: 0)
    let delivered = Atomic<Int>(0)
    let tokens = stores.map { $0.property(key).observe { _ in delivered.add(1, ordering: .relaxed) } }
    // About 0.3 s of writes per round: six or more coalesced saves (one every 50 ms while writes go on).
    let operations = settings.quick ? 10_000 : 20_000
    var next = 0
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        stores[0][key] = next
      },
      ours: { _ in
        next &+= 1
        stores[1][key] = next
      })
    for store in stores { store.flush() }
    tokens.forEach { $0.cancel() }
    precondition(delivered.load(ordering: .relaxed) > 0, "the observers never ran")
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  /// The child of ``coldOpen(_:)``: opens the suite one way (`file`: the file store at the path `suite`), reads one
  /// key, and exits.
  static func runColdOpenChild(_ way: String, suite: String) -> Never {
    let value: Int
    switch way {
    case "ours": value = DefaultsStore(suiteName: suite)![DefaultsKey<Int>("k5", default: -1)]
    case "file": value = DefaultsStore(fileURL: URL(fileURLWithPath: suite))![DefaultsKey<Int>("k5", default: -1)]
    default: value = UserDefaults(suiteName: suite)!.integer(forKey: "k5")
    }
    exit(value == 5 ? 0 : 1)
  }

  /// The time of one new process that opens `target` one way (``runColdOpenChild(_:suite:)``), reads one key and
  /// exits: `posix_spawn` to `waitpid`.
  static func timeColdOpen(_ way: String, target: String) throws -> Double {
    try timeProcess([try executablePath(), "--cold-open", way, target], what: "the \(way) child")
  }

  /// A new process that creates a store over a 10,000-key suite and reads one key ÷ a new process that makes a plain
  /// `UserDefaults(suiteName:)` and reads one key: whole processes, alternated, medians.
  static func coldOpen(_ settings: Settings) throws -> Comparison {
    let suite = prepareSuite(keys: 10_000)
    defer { cleanUp(suite) }
    func run(_ way: String) throws -> Double { try timeColdOpen(way, target: suite) }
    _ = try run("plain")
    _ = try run("ours")
    var plainTimes: [Double] = []
    var ourTimes: [Double] = []
    for round in 0..<(settings.quick ? 11 : 31) {
      if round.isMultiple(of: 2) {
        plainTimes.append(try run("plain"))
        ourTimes.append(try run("ours"))
      } else {
        ourTimes.append(try run("ours"))
        plainTimes.append(try run("plain"))
      }
    }
    let base = median(plainTimes)
    let mine = median(ourTimes)
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }
}

/// Whether a plain reader, which takes no lock, can see a torn suite file while a writer saves.
enum TornReads {
  /// The reader: reads the file in a tight loop until `PATH.stop` exists, then prints its reads and how many of them
  /// found the file torn: not beginning as XML or not ending with `</plist>` (an in-place rewrite shows as an
  /// empty file, then a growing prefix; a parser fails on each).
  static func runReader(path: String) -> Never {
    var reads = 0
    var torn = 0
    var buffer = [UInt8](repeating: 0, count: 4 << 20)
    while access(path + ".stop", F_OK) != 0 {
      let descriptor = open(path, O_RDONLY)
      guard descriptor >= 0 else {
        torn += 1
        reads += 1
        continue
      }
      var count = 0
      while true {
        let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
        if got <= 0 { break }
        count += got
      }
      close(descriptor)
      reads += 1
      var end = count
      while end > 0, [0x0A, 0x20, 0x09, 0x0D].contains(buffer[end - 1]) { end -= 1 }
      let closing = Array("</plist>".utf8)
      let whole =
        count > 5 && buffer[0..<5].elementsEqual("<?xml".utf8) && end >= closing.count
        && buffer[(end - closing.count)..<end].elementsEqual(closing)
      if !whole { torn += 1 }
    }
    print("\(reads) \(torn)")
    exit(0)
  }

  /// What saves the file while the reader reads it.
  enum Writer {
    /// A suite store: `write` then `flush()`.
    case suiteStore
    /// Plain `UserDefaults`: `set` then `synchronize()`.
    case plain
    /// A file store over a file of its own: `write` then `flush()`.
    case fileStore
  }

  /// A reader process counts torn files while this process saves a 10,000-key file 50 times.
  static func measure(_ writer: Writer) throws -> (reads: Int, torn: Int) {
    let suite: String
    let path: String
    var fileStore: DefaultsStore?
    if writer == .fileStore {
      path = scratchFile("torn")
      let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
      for index in 0..<10_000 { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
      store.flush()
      fileStore = store
      suite = ""
    } else {
      suite = Growth.prepareSuite(keys: 10_000)
      path = preferencesFolder() + "/\(suite).plist"
    }
    defer { writer == .fileStore ? cleanUpFile(path) : cleanUp(suite) }
    let reader = Process()
    reader.executableURL = URL(fileURLWithPath: try executablePath())
    reader.arguments = ["--torn-reader", path]
    let output = Pipe()
    reader.standardOutput = output
    try reader.run()
    let key = DefaultsKey<Int>("k0", default: 0)
    let store = writer == .suiteStore ? DefaultsStore(suiteName: suite)! : fileStore
    let plain = UserDefaults(suiteName: writer == .fileStore ? scratchSuite("unused") : suite)!
    for save in 1...50 {
      if let store {
        store[key] = -save
        store.flush()
      } else {
        plain.set(-save, forKey: "k0")
        plain.synchronize()
      }
    }
    guard FileManager.default.createFile(atPath: path + ".stop", contents: Data()) else {
      reader.terminate()
      throw BenchmarkError("cannot create \(path).stop")
    }
    defer { try? FileManager.default.removeItem(atPath: path + ".stop") }
    let line = LineReader(output.fileHandleForReading.fileDescriptor).next() ?? ""
    reader.waitUntilExit()
    let numbers = line.split(separator: " ").compactMap { Int($0) }
    guard numbers.count == 2 else { throw BenchmarkError("the torn-file reader answered '\(line)'") }
    return (numbers[0], numbers[1])
  }
}
