import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults
import Synchronization

struct Layout: DefaultsCodable, Equatable {
  var columns = 2
  var title = "main"
  var widths: [Double] = [120, 80, 200]
}

/// A sink the optimizer cannot see through.
final class Sink: @unchecked Sendable {
  static let shared = Sink()
  var count = 0
  @inline(never) func take<T>(_ value: T) { count &+= 1 }
}

enum Scenarios {
  // MARK: Reads

  static func reads(_ settings: Settings) -> [String: Comparison] {
    let suite = scratchSuite("reads")
    defer { cleanUp(suite) }
    let store = DefaultsStore(suiteName: suite)!
    let plain = store.userDefaults
    let intKey = DefaultsKey<Int>("int", default: 0)
    let stringKey = DefaultsKey<String>("string", default: "")
    let urlKey = DefaultsKey<URL?>("url")
    let layoutKey = DefaultsKey<Layout>("layout", default: Layout())
    store[intKey] = 42
    store[stringKey] = "a settings value of moderate length"
    store[urlKey] = URL(string: "https://user@example.com:8080/path/to/document.txt?query=1#fragment")
    store[layoutKey] = Layout(columns: 3, title: "wide", widths: [1, 2, 3])
    store.flush()
    let operations = settings.quick ? 20_000 : 100_000
    let sink = Sink.shared
    var results: [String: Comparison] = [:]
    func overhead(_ name: String, operations: Int, baseline: (Int) -> Void, ours: (Int) -> Void) {
      let (base, mine) = compare(rounds: settings.rounds, operations: operations, baseline: baseline, ours: ours)
      results[name] = Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
    }
    overhead(
      "read_overhead_int", operations: operations,
      baseline: { _ in sink.take(plain.object(forKey: "int") as? Int) }, ours: { _ in sink.take(store[intKey]) })
    overhead(
      "read_overhead_string", operations: operations,
      baseline: { _ in sink.take(plain.object(forKey: "string") as? String) },
      ours: { _ in sink.take(store[stringKey]) })
    overhead(
      "read_overhead_url", operations: operations / 10,
      baseline: { _ in sink.take(plain.url(forKey: "url")) }, ours: { _ in sink.take(store[urlKey]) })
    let decoder = JSONDecoder()
    overhead(
      "read_overhead_codable", operations: operations / 10,
      baseline: { _ in
        sink.take(plain.string(forKey: "layout").flatMap { try? decoder.decode(Layout.self, from: Data($0.utf8)) })
      },
      ours: { _ in sink.take(store[layoutKey]) })
    // Both ours: a Codable key's read against an Int key's (a stored value decoded once is not decoded again).
    overhead(
      "read_codable_vs_int", operations: operations,
      baseline: { _ in sink.take(store[intKey]) }, ours: { _ in sink.take(store[layoutKey]) })
    return results
  }

  // MARK: Writes

  /// What Apple platforms' size limit costs a write (iOS, iPadOS, watchOS, visionOS, tvOS keep a running estimate of
  /// each suite's size; macOS and Linux do not): in-memory stores, with and without it, one observer each, a 1,000-key
  /// suite.
  static func sizeBudget(_ settings: Settings) -> Comparison {
    let limited = DefaultsStore.inMemoryLimitedAsOnIOS()
    let plain = DefaultsStore.inMemory()
    for store in [limited, plain] {
      for index in 0..<1_000 { store[DefaultsKey<String>("key\(index)", default: "")] = "value \(index)" }
    }
    let key = DefaultsKey<Int>("int", default: 0)
    let tokens = [limited, plain].map { $0.property(key).observe { _ in } }
    let operations = settings.quick ? 20_000 : 100_000
    var next = 1
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        plain[key] = next
      },
      ours: { _ in
        next &+= 1
        limited[key] = next
      })
    withExtendedLifetime(tokens) {}
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  static func write(_ settings: Settings) -> Comparison {
    let suite = scratchSuite("write")
    defer { cleanUp(suite) }
    let store = DefaultsStore(suiteName: suite)!
    let plain = UserDefaults(suiteName: scratchSuite("write-plain"))!
    let key = DefaultsKey<Int>("int", default: 0)
    let delivered = Atomic<Int>(0)
    let token = store.property(key).observe { _ in delivered.add(1, ordering: .relaxed) }
    let operations = settings.quick ? 10_000 : 50_000
    // Distinct values each time: a write of the stored value would be skipped, which is not what is measured.
    var next = 1
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        plain.set(next, forKey: "int")
      },
      ours: { _ in
        next &+= 1
        store[key] = next
      })
    token.cancel()
    precondition(delivered.load(ordering: .relaxed) > 0, "the observer never ran")
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  /// One write of a key observed by one 5-key observer ÷ one write of a key observed by one single-key observer:
  /// the other four values are kept by the observation, not re-read.
  static func multiKey(_ settings: Settings) -> Comparison {
    let single = DefaultsStore(suiteName: scratchSuite("multikey-single"))!
    let several = DefaultsStore(suiteName: scratchSuite("multikey-five"))!
    defer {
      cleanUp(single.suiteName!)
      cleanUp(several.suiteName!)
    }
    let a = DefaultsKey<Int>("a", default: 0)
    let b = DefaultsKey<Double>("b", default: 0)
    let c = DefaultsKey<String>("c", default: "")
    let d = DefaultsKey<Bool>("d", default: false)
    let e = DefaultsKey<[Int]>("e", default: [])
    let delivered = Atomic<Int>(0)
    let one = single.property(a).observe { _ in delivered.add(1, ordering: .relaxed) }
    let five = several.observe(a, b, c, d, e) { _, _, _, _, _ in delivered.add(1, ordering: .relaxed) }
    let operations = settings.quick ? 10_000 : 50_000
    var next = 1
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        single[a] = next
      },
      ours: { _ in
        next &+= 1
        several[a] = next
      })
    withExtendedLifetime((one, five)) {}
    precondition(delivered.load(ordering: .relaxed) > 0, "the observers never ran")
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  // MARK: Read after write

  /// One write of a key then a read of another key, in a suite of `keys` keys: plain `set` + `integer(forKey:)`
  /// (corelibs rebuilds its merged view of every domain after the write) and the store's typed write + typed read.
  static func readAfterWrite(keys: Int, _ settings: Settings) -> Comparison {
    let plainSuite = scratchSuite("rw-plain")
    let store = DefaultsStore(suiteName: scratchSuite("rw-ours"))!
    let plain = UserDefaults(suiteName: plainSuite)!
    defer {
      cleanUp(plainSuite)
      cleanUp(store.suiteName!)
    }
    let names = (0..<keys).map { "k\($0)" }
    let typed = names.map { DefaultsKey<Int>($0, default: 0) }
    for (index, name) in names.enumerated() {
      plain.set(index, forKey: name)
      store[typed[index]] = index
    }
    plain.synchronize()
    store.flush()
    let sink = Sink.shared
    // The plain cycle costs milliseconds at 1,000 keys: fewer operations, so that a run stays short.
    let operations = keys >= 1_000 ? (settings.quick ? 20 : 60) : (settings.quick ? 500 : 2_000)
    var next = 0
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { index in
        next &+= 1
        plain.set(next, forKey: names[0])
        sink.take(plain.integer(forKey: names[1 + index % (keys - 1)]))
      },
      ours: { index in
        next &+= 1
        store[typed[0]] = next
        sink.take(store[typed[1 + index % (keys - 1)]])
      })
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: base / mine)
  }

  // MARK: Transactions

  /// `update { $0 += 1 }` (a locked reload-and-save) ÷ a plain write of the same key followed by `flush()`, in a
  /// 100-key suite: an edit should cost one save, not more.
  static func editVersusFlush(_ settings: Settings) -> Comparison {
    let store = DefaultsStore(suiteName: scratchSuite("edit"))!
    defer { cleanUp(store.suiteName!) }
    for index in 0..<100 { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
    store.flush()
    let key = DefaultsKey<Int>("count", default: 0)
    let property = store.property(key)
    let operations = settings.quick ? 200 : 1_000
    var next = 0
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        store[key] = next
        store.flush()
      },
      ours: { _ in
        do { try property.update { $0 += 1 } } catch { fatalError("update failed: \(error)") }
      })
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  // MARK: Fan-out

  /// One write with `keys` keys observed: the classic recipe (every observer hears one shared "something
  /// changed" signal, re-reads its key and compares with its last value) against the per-key hub.
  static func fanout(keys: Int, _ settings: Settings) -> Comparison {
    let classicSuite = scratchSuite("fanout-classic")
    let oursSuite = scratchSuite("fanout-ours")
    defer {
      cleanUp(classicSuite)
      cleanUp(oursSuite)
    }
    // UserDefaults is thread-safe but not marked Sendable in corelibs (recent Apple SDKs mark it): a wrapper
    // compiles under both, where `nonisolated(unsafe)` warns once the SDK says Sendable.
    let classic = UncheckedDefaults(UserDefaults(suiteName: classicSuite)!)
    let store = DefaultsStore(suiteName: oursSuite)!
    let names = (0..<keys).map { "key\($0)" }
    for name in names {
      classic.instance.set(0, forKey: name)
      store.userDefaults.set(0, forKey: name)
    }

    // The classic recipe, as RxCocoa's rx.observe / didChangeNotification + distinctUntilChanged is written.
    let changed = Notification.Name("rdefaults-bench.somethingChanged")
    let center = NotificationCenter()
    final class LastSeen: @unchecked Sendable {
      var values: [Int]
      init(values: [Int]) { self.values = values }
    }
    let lastSeen = LastSeen(values: Array(repeating: 0, count: keys))
    let classicDeliveries = Atomic<Int>(0)
    let observers = names.enumerated().map { index, name in
      center.addObserver(forName: changed, object: nil, queue: nil) { _ in
        let value = classic.instance.object(forKey: name) as? Int ?? 0
        if value != lastSeen.values[index] {
          lastSeen.values[index] = value
          classicDeliveries.add(1, ordering: .relaxed)
        }
      }
    }
    let ourDeliveries = Atomic<Int>(0)
    let tokens = names.map { name in
      store.property(DefaultsKey<Int>(name, default: 0)).observe(initial: false) { _ in
        ourDeliveries.add(1, ordering: .relaxed)
      }
    }
    let operations = max(3, (settings.quick ? 40_000 : 200_000) / keys)
    let written = DefaultsKey<Int>("key0", default: 0)
    var next = 1
    let (base, mine) = compare(
      rounds: settings.rounds, operations: operations,
      baseline: { _ in
        next &+= 1
        classic.instance.set(next, forKey: "key0")
        center.post(name: changed, object: nil)
      },
      ours: { _ in
        next &+= 1
        store[written] = next
      })
    for observer in observers { center.removeObserver(observer) }
    for token in tokens { token.cancel() }
    precondition(classicDeliveries.load(ordering: .relaxed) > 0 && ourDeliveries.load(ordering: .relaxed) > 0)
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: base / mine)
  }

  // MARK: Memory

  static func bytesPerObserver(_ settings: Settings) -> (bytes: Double, observers: Int) {
    let suite = scratchSuite("memory")
    defer { cleanUp(suite) }
    let store = DefaultsStore(suiteName: suite)!
    let keys = (0..<1_000).map { DefaultsKey<Int>("key\($0)", default: 0) }
    let count = 100_000
    // Warm up: the first observers of a key make its entry; measure the steady state of many observers.
    var warmUp = keys.map { store.property($0).observe { _ in } }
    let before = residentBytes()
    var tokens: [DefaultsObservation] = []
    tokens.reserveCapacity(count)
    for index in 0..<count {
      tokens.append(store.property(keys[index % keys.count]).observe { value in Sink.shared.take(value) })
    }
    let after = residentBytes()
    tokens.removeAll()
    warmUp.removeAll()
    return (Double(after - before) / Double(count), count)
  }

  // MARK: Bulk writes

  static func bulkNewKeys(_ settings: Settings) -> Comparison {
    bulkNewKeys(settings, label: "bulk") { DefaultsStore(suiteName: $0)! }
  }

  /// 8,000 new keys with plain `set` and one `synchronize()` ÷ the same keys written to the store `makeStore` makes
  /// over a scratch name, then `flush()`: alternated over rounds, medians.
  static func bulkNewKeys(
    _ settings: Settings, label: String, makeStore: (String) -> DefaultsStore
  ) -> Comparison {
    let count = 8_000
    let clock = ContinuousClock()
    var plainTimes: [Double] = []
    var ourTimes: [Double] = []
    for round in 0..<(settings.quick ? 1 : 3) {
      let plainSuite = scratchSuite("\(label)-plain")
      let ourName = scratchSuite("\(label)-ours")
      defer {
        cleanUp(plainSuite)
        cleanUp(ourName)
      }
      func measurePlain() {
        let plain = UserDefaults(suiteName: plainSuite)!
        plainTimes.append(
          nanoseconds(
            clock.measure {
              for index in 0..<count { plain.set(index, forKey: "key\(index)") }
              plain.synchronize()
            }))
      }
      func measureOurs() {
        let store = makeStore(ourName)
        ourTimes.append(
          nanoseconds(
            clock.measure {
              for index in 0..<count { store[DefaultsKey<Int>("key\(index)", default: 0)] = index }
              store.flush()
            }))
      }
      if round.isMultiple(of: 2) {
        measurePlain()
        measureOurs()
      } else {
        measureOurs()
        measurePlain()
      }
    }
    let base = median(plainTimes) / Double(count)
    let mine = median(ourTimes) / Double(count)
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: base / mine)
  }
}

/// A `UserDefaults` that may be captured by `@Sendable` closures (it is documented as thread-safe).
struct UncheckedDefaults: @unchecked Sendable {
  let instance: UserDefaults
  init(_ instance: UserDefaults) { self.instance = instance }
}
