// Sync across devices (issue 37): what a sync adds to a local write, and how long a write takes to reach another
// device's observer through a synced folder.
import Dispatch
import Foundation
import ReactiveDefaults
import Synchronization

enum SyncScenarios {
  /// A write of a synced key ÷ a write of an unsynced key of the same store, both observed: two suites, one synced
  /// with a folder. The sync's work after the write (stamping the write in the suite, pushing it into the folder)
  /// runs on its own queue, coalesced; what is measured is the writing thread's time, writes continuing across the
  /// sync's runs.
  static func writeOverhead(_ settings: Settings) -> Comparison {
    let folder = NSTemporaryDirectory() + "bench-sync-\(UUID().uuidString)"
    let suites = [scratchSuite("sync-plain"), scratchSuite("sync-synced")]
    defer {
      suites.forEach(cleanUp)
      try? FileManager.default.removeItem(atPath: folder)
    }
    let stores = suites.map { DefaultsStore(suiteName: $0)! }
    let key = DefaultsKey<Int>("synced", default: 0)
    let delivered = Atomic<Int>(0)
    let tokens = stores.map { $0.property(key).observe { _ in delivered.add(1, ordering: .relaxed) } }
    let sync = stores[1].sync(key, with: .folder(URL(fileURLWithPath: folder)))
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
    sync.cancel()
    tokens.forEach { $0.cancel() }
    precondition(delivered.load(ordering: .relaxed) > 0, "the observers never ran")
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }

  /// Milliseconds from a write on one device (a suite syncing with a folder) to the observer of the key on another
  /// (another suite syncing with the same folder) being called: stamping and pushing the write (an atomic save of the
  /// device's file), the folder's watch, the other device reading the files and writing the value, its observer.
  /// Both devices are in this process (the folder is what is between them; each save is a real file).
  static func folderLatency(samples: Int) -> [Double] {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "bench-sync-latency-\(UUID().uuidString)")
    let suites = [scratchSuite("sync-writer"), scratchSuite("sync-reader")]
    defer {
      suites.forEach(cleanUp)
      try? FileManager.default.removeItem(at: folder)
    }
    let stores = suites.map { DefaultsStore(suiteName: $0)! }
    let key = DefaultsKey<Int>("value", default: 0)
    let syncs = stores.map { $0.sync(key, with: .folder(folder)) }
    let arrived = Mutex<[Int: UInt64]>([:])
    let signal = DispatchSemaphore(value: 0)
    let token = stores[1].property(key).observe { value in
      let now = DispatchTime.now().uptimeNanoseconds
      let first = arrived.withLock { arrived in
        guard arrived[value] == nil else { return false }
        arrived[value] = now
        return true
      }
      if first && value > 0 { signal.signal() }
    }
    var latencies: [Double] = []
    for sample in 1...(samples + 5) {
      let start = DispatchTime.now().uptimeNanoseconds
      stores[0][key] = sample
      guard signal.wait(timeout: .now() + 10) == .success, let end = arrived.withLock({ $0[sample] }) else {
        FileHandle.standardError.write(Data("sync latency: sample \(sample) did not arrive within 10 s\n".utf8))
        continue
      }
      // The first five warm the folder's watch and the files up.
      if sample > 5 { latencies.append(Double(end - start) / 1e6) }
    }
    token.cancel()
    syncs.forEach { $0.cancel() }
    return latencies
  }
}
