import Foundation
import ReactiveDefaults
import Synchronization

/// The file store (`DefaultsStore(fileURL:)`) against raw corelibs `UserDefaults`, in the same run.
enum FileStores {
  /// Raw `set` × 8,000 new keys and one `synchronize()` ÷ the file store's 8,000 writes and `flush()`: corelibs'
  /// cost of a new key grows with its unsaved keys; the file store's does not, and its save is one O(n) write.
  static func bulkNewKeys(_ settings: Settings) -> Comparison {
    // A file in the scratch folder per name (removed with the suite's files: `cleanUp` also takes the file store's).
    Scenarios.bulkNewKeys(settings, label: "file-bulk") { name in
      DefaultsStore(fileURL: URL(fileURLWithPath: scratchFolder() + "/\(name).plist"))!
    }
  }

  /// A typed `Int` read of the file store ÷ raw `object(forKey:) as? Int` of a suite.
  static func read(_ settings: Settings) -> Comparison {
    let suite = scratchSuite("file-read-plain")
    let path = scratchFile("read")
    defer {
      cleanUp(suite)
      cleanUpFile(path)
    }
    let plain = UserDefaults(suiteName: suite)!
    plain.set(42, forKey: "int")
    let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
    let key = DefaultsKey<Int>("int", default: 0)
    store[key] = 42
    store.flush()
    let sink = Sink.shared
    let (base, mine) = compare(
      rounds: settings.rounds, operations: settings.quick ? 20_000 : 100_000,
      baseline: { _ in sink.take(plain.object(forKey: "int") as? Int) }, ours: { _ in sink.take(store[key]) })
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  /// A write of the file store with one observer ÷ raw `set(_:forKey:)`.
  static func write(_ settings: Settings) -> Comparison {
    let suite = scratchSuite("file-write-plain")
    let path = scratchFile("write")
    defer {
      cleanUp(suite)
      cleanUpFile(path)
    }
    let plain = UserDefaults(suiteName: suite)!
    let store = DefaultsStore(fileURL: URL(fileURLWithPath: path))!
    let key = DefaultsKey<Int>("int", default: 0)
    let delivered = Atomic<Int>(0)
    let token = store.property(key).observe { _ in delivered.add(1, ordering: .relaxed) }
    var next = 1
    let (base, mine) = compare(
      rounds: settings.rounds, operations: settings.quick ? 10_000 : 50_000,
      baseline: { _ in
        next &+= 1
        plain.set(next, forKey: "int")
      },
      ours: { _ in
        next &+= 1
        store[key] = next
      })
    store.flush()
    token.cancel()
    precondition(delivered.load(ordering: .relaxed) > 0, "the observer never ran")
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  /// Writes of one observed key, continuing across coalesced saves, in a 10,000-key file ÷ in a 100-key file.
  static func writeGrowth(_ settings: Settings) -> Comparison {
    let paths = [scratchFile("size100"), scratchFile("size10000")]
    defer { paths.forEach(cleanUpFile) }
    let stores = paths.map { DefaultsStore(fileURL: URL(fileURLWithPath: $0))! }
    for (store, keys) in zip(stores, [100, 10_000]) {
      for index in 0..<keys { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
      store.flush()
    }
    return Growth.writeGrowth(small: stores[0], large: stores[1], settings)
  }
}
