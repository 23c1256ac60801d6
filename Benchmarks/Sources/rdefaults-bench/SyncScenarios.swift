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

  /// Milliseconds of CPU time the library spends per remote change in a synced folder of `devices` device files (10
  /// keys each): another device's file replaced (written whole and renamed over the old one, as a file-sync tool
  /// does) with a newer entry of the synced key, until the key's observer here has the new value. What is counted:
  /// every thread of this process but the one writing the file (the folder's watch, the pull, the value written into
  /// the suite with the sync's state, the observer). The median of `changes` changes, after five that warm up.
  static func folderPull(devices: Int = 2_000, changes: Int) throws -> Double {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "bench-sync-pull-\(UUID().uuidString)")
    let suite = scratchSuite("sync-pull")
    defer {
      cleanUp(suite)
      try? FileManager.default.removeItem(at: folder)
    }
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let wall = Int(Date().timeIntervalSince1970 * 1000) - 3_600_000
    /// A device's file: keys `k0`…`k9`, each an entry stamped `counter` on `device`'s clock.
    func deviceFile(_ device: String, counter: Int, value: Int) throws -> Data {
      var entries: [String: Any] = [:]
      for key in 0..<10 {
        entries["k\(key)"] = ["t": wall + counter, "c": counter, "d": device, "v": value + key] as [String: Any]
      }
      return try PropertyListSerialization.data(fromPropertyList: entries, format: .xml, options: 0)
    }
    for device in 0..<devices {
      let name = String(format: "device-%04d", device)
      try deviceFile(name, counter: 1, value: 0).write(to: folder.appendingPathComponent(name + ".plist"))
    }
    let store = DefaultsStore(suiteName: suite)!
    let key = DefaultsKey<Int>("k0", default: -1)
    let arrived = Mutex<Int>(-1)
    let signal = DispatchSemaphore(value: 0)
    let token = store.property(key).observe { value in
      arrived.withLock { $0 = value }
      signal.signal()
    }
    let sync = store.sync(key, with: .folder(folder))
    var costs: [Double] = []
    let writer = "device-0042"
    for change in 1...(changes + 5) {
      let value = 1_000_000 + change
      let bytes = try deviceFile(writer, counter: 1 + change, value: value)
      let before = libraryCPUNanoseconds()
      try bytes.write(to: folder.appendingPathComponent(writer + ".plist"), options: .atomic)
      while arrived.withLock({ $0 }) != value {
        guard signal.wait(timeout: .now() + 10) == .success else {
          FileHandle.standardError.write(Data("sync pull: change \(change) did not arrive within 10 s\n".utf8))
          break
        }
      }
      if change > 5 { costs.append(Double(libraryCPUNanoseconds() - before) / 1e6) }
    }
    sync.cancel()
    token.cancel()
    return percentile(costs, 0.5)
  }

  /// The CPU time of every thread of this process but the calling one, in nanoseconds.
  private static func libraryCPUNanoseconds() -> Int64 {
    func nanoseconds(_ clock: clockid_t) -> Int64 {
      var time = timespec()
      clock_gettime(clock, &time)
      return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
    return nanoseconds(CLOCK_PROCESS_CPUTIME_ID) - nanoseconds(CLOCK_THREAD_CPUTIME_ID)
  }
}
