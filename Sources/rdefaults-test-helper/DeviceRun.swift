// Runs one DevicePlan (Sources/HistoryChecker/Devices): devices are in-memory stores, each with its own sync, over
// the cloud model (MemoryCloud) or a synced folder; each operation is followed by a wait until every sync is idle, so
// that a seed runs the same history every time (the folder's watch aside).
import Dispatch
import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

/// State the syncs' callbacks share with the run, behind a lock ThreadSanitizer sees.
final class DeviceRecords: @unchecked Sendable {  // every stored property is behind `lock`
  private let lock = NSLock()
  private var heardValues: [[[Int?]]]
  private var problemList: [String] = []

  init(devices: Int) {
    heardValues = Array(repeating: Array(repeating: [], count: DevicePlan.keys.count), count: devices)
  }

  private var refusalCount = 0

  func heard(_ value: Int?, device: Int, key: Int) {
    lock.withLock { heardValues[device][key].append(value) }
  }

  /// A store's report: a problem, unless it refuses the hostile peer's entry.
  func problem(_ text: String) {
    lock.withLock {
      if DeviceHistory.isHostileRefusal(text) { refusalCount += 1 } else { problemList.append(text) }
    }
  }

  var heard: [[[Int?]]] { lock.withLock { heardValues } }
  var problems: [String] { lock.withLock { problemList } }
  var refusals: Int { lock.withLock { refusalCount } }
}

final class DeviceRun {
  private let plan: DevicePlan
  private let cloud = MemoryCloud()
  private let folder: URL?
  /// The wall time every device's clock reads, before its skew (milliseconds since 1970: a day in 2027).
  private let time = Guarded<Int64>(1_800_000_000_000)
  private let records: DeviceRecords

  private struct Device {
    let store: DefaultsStore
    let connection: MemoryCloud.Connection
    var sync: DefaultsSync?
    var observers: [DefaultsObservation]
    var online = true
    /// The values when its sync stopped (folder, offline), and the writes made since.
    var valuesWhenStopped: [Int?] = []
    var writesWhileStopped: [Int] = []
  }

  private var devices: [Device?]
  private var history = DeviceHistory()

  init(_ plan: DevicePlan) {
    self.plan = plan
    records = DeviceRecords(devices: plan.devices)
    devices = Array(repeating: nil, count: plan.devices)
    folder =
      plan.folder ? URL(fileURLWithPath: NSTemporaryDirectory() + "devices-\(plan.seed)-\(UUID().uuidString)") : nil
  }

  private static func key(_ index: Int) -> DefaultsKey<Int?> { DefaultsKey(DevicePlan.keys[index]) }

  func run() -> DeviceHistory {
    defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
    for device in 0..<plan.devices where plan.startsJoined[device] { join(device) }
    waitForIdle()
    for (index, operation) in plan.operations.enumerated() {
      apply(operation, index: index)
      waitForIdle()
      checkStoredValuesDecode(after: index)
    }
    if plan.folder { settleFolder() } else { settleCloud() }
    collect()
    for device in devices.compactMap({ $0 }) {
      device.sync?.cancel()
      device.observers.forEach { $0.cancel() }
    }
    return history
  }

  // MARK: Operations

  private func join(_ index: Int) {
    guard devices[index] == nil else { return }
    var own: [PropertyListKey: PropertyListValue] = [:]
    for (key, value) in plan.ownValues[index].enumerated() {
      if let value { own[PropertyListKey(DevicePlan.keys[key])] = .integer(Int128(value)) }
    }
    let store = DefaultsStore.inMemory(own)
    let records = records
    store.issueHandler = { records.problem("device \(index): \($0)") }
    let observers = DevicePlan.keys.indices.map { key in
      store.property(Self.key(key)).observe { records.heard($0, device: index, key: key) }
    }
    devices[index] = Device(
      store: store, connection: cloud.connect(account: "A"), sync: nil, observers: observers)
    startSync(index)
  }

  private func startSync(_ index: Int) {
    guard let device = devices[index] else { return }
    let skew = plan.skews[index]
    let time = time
    let now: @Sendable () -> Int64 = { time.withLock { $0 } + skew }
    // A folder judges the stamps it reads by the device's clock, as the sync does.
    let remote: any DefaultsRemote = folder.map { SyncedFolder($0, now: now) } ?? device.connection
    devices[index]?.sync = device.store.sync(
      DevicePlan.keys.indices.map(Self.key), with: remote, now: now, coalescing: .zero)
  }

  /// The device's clock now.
  private func wall(_ index: Int) -> Int64 { time.withLock { $0 } + plan.skews[index] }

  private func noteWhileStopped(_ device: Int) {
    let next = history.writes.count
    if plan.folder && devices[device]?.online == false { devices[device]?.writesWhileStopped.append(next) }
  }

  /// A folder device's sync starts again: the writes made while it was stopped that left a key as it was are undone.
  private func restartAfterStop(_ device: Int) {
    guard let stopped = devices[device] else { return }
    let now = finalValues()[device]
    for write in stopped.writesWhileStopped {
      let key = history.writes[write].key
      if now[key] == stopped.valuesWhenStopped[key] { history.writes[write].undone = true }
    }
    devices[device]?.writesWhileStopped = []
    startSync(device)
  }

  private func account(_ index: Int) -> String {
    plan.folder ? "A" : devices[index].map { cloud.account(of: $0.connection) } ?? "A"
  }

  private func apply(_ operation: DevicePlan.Operation, index: Int) {
    switch operation {
    case .write(let device, let key, let value):
      guard let store = devices[device]?.store else { return }
      // What the store held just before: a pull landing between the look and the write leaves an older entry
      // there, which the write must outrank all the same.
      let seen = store[Self.key(key)]
      store[Self.key(key)] = value
      noteWhileStopped(device)
      history.writes.append(
        .init(
          operation: index, device: device, key: key, value: value, account: account(device), wall: wall(device),
          seen: seen))
    case .remove(let device, let key):
      guard let store = devices[device]?.store else { return }
      // Removing a key that holds nothing writes nothing. The look and the removal are one edit: a folder device's
      // pull runs whenever its watch hears another device's file (not only inside waitForIdle), and one landing
      // between them made a removal of the pulled value that the history did not record.
      let held: Bool
      do {
        held = try store.edit { tx in
          defer { tx.reset(Self.key(key)) }
          return tx[Self.key(key)] != nil
        }
      } catch {
        records.problem("device \(device): the removal of key \(key) failed: \(error)")
        return
      }
      if held {
        noteWhileStopped(device)
        history.writes.append(
          .init(operation: index, device: device, key: key, value: nil, account: account(device), wall: wall(device)))
      }
    case .deliver(let pick):
      let online = Set(devices.compactMap { $0 }.filter(\.online).map(\.connection.id))
      let waiting = cloud.pending.filter { delivery in
        switch delivery {
        case .upload(let id), .download(let id): online.contains(id)
        }
      }
      if !waiting.isEmpty { cloud.deliver(waiting[pick % waiting.count]) }
    case .duplicate(let device):
      if let connection = devices[device]?.connection, devices[device]?.online == true {
        cloud.deliver(.download(connection.id))
      }
    case .offline(let device):
      guard devices[device]?.online == true else { return }
      devices[device]?.online = false
      if plan.folder {
        devices[device]?.sync?.cancel()
        devices[device]?.sync = nil
        let values = finalValues()[device]
        devices[device]?.valuesWhenStopped = values
        devices[device]?.writesWhileStopped = []
      }
    case .online(let device):
      guard devices[device]?.online == false else { return }
      devices[device]?.online = true
      if plan.folder { restartAfterStop(device) }
    case .restart(let device):
      guard let current = devices[device], current.online || !plan.folder else { return }
      current.sync?.cancel()
      startSync(device)
    case .join(let device):
      join(device)
    case .tick(let milliseconds):
      time.withLock { $0 += Int64(milliseconds) }
    case .switchAccount(let device):
      guard !plan.folder, let connection = devices[device]?.connection, cloud.account(of: connection) == "A" else {
        return
      }
      cloud.switchAccount(connection, to: "B")
    case .kill:
      break  // devices are processes only in DeviceProcessRun
    case .garbage, .forge, .deleteFile, .conflictCopy, .emptyFolder:
      guard let folder else { return }
      let names = devices.indices.map(name)
      var problems: [String] = []
      let forgery = HostileFolder(folder: folder).apply(
        operation, index: index, names: names, time: time.withLock { $0 }, problems: &problems)
      if let forgery { history.forgeries.append(forgery) }
      problems.forEach(records.problem)
    }
  }

  /// Every device's stored value of each key is an integer or none: a refused entry replaced none.
  private func checkStoredValuesDecode(after index: Int) {
    for (device, store) in devices.enumerated() {
      guard let stored = store?.store.storedEntries else { continue }
      for key in DevicePlan.keys {
        guard let value = stored[PropertyListKey(key)] else { continue }
        if case .integer(let number) = value, Int(exactly: number) != nil { continue }
        records.problem("device \(device) holds \(value) for \(key) after operation \(index): it does not decode")
      }
    }
  }

  /// The device's sync name, nil before it joined.
  private func name(_ index: Int) -> String? {
    guard case .dictionary(let state)? = devices[index]?.store.storedEntries[PropertyListKey(DefaultsSync.stateKey)],
      case .string(let name)? = state["device"]
    else { return nil }
    return name
  }

  // MARK: Quiescence

  private func waitForIdle() {
    for device in devices.compactMap({ $0 }) {
      guard let sync = device.sync else { continue }
      if !waitUntilIdle(sync) { records.problem("a sync was not idle within 30 s") }
    }
  }

  /// Every device online, on one account; every delivery made, until nothing moves.
  private func settleCloud() {
    for index in devices.indices { devices[index]?.online = true }
    if devices.indices.contains(where: { devices[$0] != nil && account($0) == "B" }) {
      for index in devices.indices where devices[index] != nil && account(index) == "A" {
        cloud.switchAccount(devices[index]!.connection, to: "B")
        waitForIdle()
      }
    }
    for round in 0..<200 {
      waitForIdle()
      if cloud.pending.isEmpty {
        if round > 0 { break }
        for device in devices.compactMap({ $0 }) { device.sync?.synchronize() }
        continue
      }
      cloud.deliverAll()
    }
    history.finalAccount = devices.indices.first { devices[$0] != nil }.map(account) ?? "A"
  }

  /// Every device online; synchronized until the values stop changing. First, the folder's watch alone brings every
  /// device the greatest entry of each key within 3 s, with no `synchronize()` (which would hide a change the watch
  /// missed: a device's own file removed, and not pushed again).
  private func settleFolder() {
    for index in devices.indices where devices[index]?.online == false {
      devices[index]?.online = true
      restartAfterStop(index)
    }
    waitForIdle()
    if let folder {
      let deadline = Date().addingTimeInterval(3)
      var disagreement = watchDisagreement(folder)
      while let found = disagreement, Date() < deadline {
        usleep(10_000)  // the watch's latency is milliseconds; this polls for it, bounded by the deadline
        waitForIdle()
        disagreement = watchDisagreement(folder)
        if disagreement == nil { break }
        _ = found
      }
      if let disagreement { records.problem("without synchronize(), within 3 s: \(disagreement)") }
    }
    var last: [[Int?]] = []
    for _ in 0..<50 {
      for device in devices.compactMap({ $0 }) { device.sync?.synchronize() }
      waitForIdle()
      let now = finalValues()
      if now == last { break }
      last = now
    }
  }

  /// The first key some joined device holds otherwise than the folder's greatest entry of it (nil: none).
  private func watchDisagreement(_ folder: URL) -> String? {
    var folderHistory = DeviceHistory()
    folderHistory.recordEntries(ofFolder: folder)
    let values = finalValues()
    for key in DevicePlan.keys.indices {
      let entries = folderHistory.uploads.filter { $0.key == key }
      guard let best = entries.max(by: { DeviceHistory.outranks($1, $0) }) else { continue }
      for device in devices.indices where devices[device] != nil && values[device][key] != best.value {
        return "key \(key): device \(device) holds \(values[device][key].map(String.init) ?? "nothing"), the folder's "
          + "greatest entry \(best.value.map(String.init) ?? "nothing")"
      }
    }
    return nil
  }

  // MARK: What it left

  private func finalValues() -> [[Int?]] {
    devices.map { device in
      guard let device else { return [] }
      let stored = device.store.storedEntries
      return DevicePlan.keys.map { key in
        if case .integer(let value)? = stored[PropertyListKey(key)] { Int(exactly: value) } else { nil }
      }
    }
  }

  private func collect() {
    history.finalValues = finalValues()
    history.heard = records.heard
    history.problems = records.problems
    history.refusals = records.refusals
    history.deviceNames = devices.indices.map(name)
    if let folder {
      history.recordEntries(ofFolder: folder)
    } else {
      for account in ["A", "B"] {
        for (key, entry) in cloud.arrivals(ofAccount: account) { history.record(entry, key: key, account: account) }
      }
    }
  }
}

extension DeviceHistory {
  /// The entries of every device's file in a synced folder (the hostile peer's aside), as uploads to account "A",
  /// read from the files as other devices read them.
  mutating func recordEntries(ofFolder folder: URL) {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    for name in names where name.hasSuffix(".plist") && !name.hasPrefix(".") && name != HostileFolder.fileName {
      do {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        for (key, entry) in try DefaultsStore.domain(fromPropertyList: data) {
          record(entry, key: key.string, account: "A")
        }
      } catch {
        problems.append("the device file \(name) cannot be read: \(error)")
      }
    }
  }

  /// A remote entry of `key`, as an upload (or a problem, when it is not the library's form).
  mutating func record(_ entry: PropertyListValue, key: String, account: String) {
    guard let index = DevicePlan.keys.firstIndex(of: key), case .dictionary(let fields) = entry,
      case .integer(let wall)? = fields["t"], case .integer(let counter)? = fields["c"],
      case .string(let device)? = fields["d"]
    else {
      problems.append("an entry of \(key) on \(account) is not the library's: \(entry)")
      return
    }
    var value: Int?
    if let stored = fields["v"] {
      guard case .integer(let number) = stored, let integer = Int(exactly: number) else {
        problems.append("an entry of \(key) holds \(stored)")
        return
      }
      value = integer
    }
    guard let wall = Int64(exactly: wall), let counter = Int64(exactly: counter) else {
      problems.append("an entry of \(key) on \(account) has a stamp beyond 64 bits: \(entry)")
      return
    }
    let stamp = DeviceStamp(wall: wall, counter: counter, device: device)
    uploads.append(.init(account: account, key: index, value: value, stamp: stamp))
  }
}
