import ChildProcess
// Runs a DevicePlan of processes (Sources/HistoryChecker/Devices): each device is a process of its own (`device`,
// DeviceWorker.swift) over a real suite under its own XDG_CONFIG_HOME, synced with a real folder. A `kill` operation
// SIGKILLs the device's process a chosen time after the operation before it returned, without waiting for that one's
// save or push, and starts the process again over the same suite: the writes the kill lost (the suite holds an earlier
// value) are undone; every other write must reach the folder, as in DeviceRun.
import Dispatch
import Foundation
import HistoryChecker

final class DeviceProcessRun {
  private let plan: DevicePlan
  private let root = NSTemporaryDirectory() + "device-processes-\(UUID().uuidString)"
  private var folder: String { root + "/folder" }
  /// The wall time every device's clock reads, before its skew (milliseconds since 1970: a day in 2027).
  private var time: Int64 = 1_800_000_000_000
  private var history = DeviceHistory()
  /// When each write (by its index in the history) returned, on the monotonic clock.
  private var writeMoments: [Int: UInt64] = [:]
  /// A write older than this at a kill was saved (the library saves within 100 ms; the rest is margin for a loaded
  /// machine): a kill cannot have lost it, and a value other than it in the suite is a later one's.
  private static let savedWithinNanoseconds: UInt64 = 2_000_000_000

  private final class Device {
    let worker: WorkerProcess
    var asked = 0
    var online = true
    /// The values when its sync stopped (offline), and the writes made since.
    var valuesWhenStopped: [Int?] = []
    var writesWhileStopped: [Int] = []

    init(worker: WorkerProcess) { self.worker = worker }
  }

  private var devices: [Device?]

  init(_ plan: DevicePlan) {
    self.plan = plan
    devices = Array(repeating: nil, count: plan.devices)
  }

  func run() -> DeviceHistory {
    defer { try? FileManager.default.removeItem(atPath: root) }
    do {
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    } catch {
      history.problems.append("cannot make \(folder): \(error)")
      return history
    }
    for device in 0..<plan.devices where plan.startsJoined[device] { join(device) }
    waitForIdle()
    for (index, operation) in plan.operations.enumerated() {
      apply(operation, index: index)
      // A kill next comes at its moment, whatever this operation left under way.
      let next = plan.operations.indices.contains(index + 1) ? plan.operations[index + 1] : nil
      if case .kill = next { continue }
      waitForIdle()
    }
    settle()
    collect()
    for device in devices.compactMap({ $0 }) { end(device) }
    return history
  }

  // MARK: Processes

  private func launch(_ index: Int, own: [String]) -> Device? {
    let arguments = ["device", folder, "\(plan.skews[index])", "\(time)"] + own
    guard let process = try? WorkerProcess(arguments: arguments, configHome: root + "/device-\(index)") else {
      history.problems.append("device \(index)'s process did not start")
      return nil
    }
    return Device(worker: process)
  }

  /// Sends `command` and waits for its answer (nil, and a problem, when none came within 60 s).
  @discardableResult private func ask(_ index: Int, _ command: String) -> String? {
    guard let device = devices[index] else { return nil }
    device.asked += 1
    let tag = "\(device.asked) "
    device.worker.send(tag + command)
    guard device.worker.wait(until: { $0.hasPrefix(tag) }, deadline: .now() + .seconds(60)),
      let line = device.worker.output.lines.last(where: { $0.hasPrefix(tag) })
    else {
      history.problems.append("device \(index) did not answer \(command)")
      return nil
    }
    return String(line.dropFirst(tag.count))
  }

  /// The process's input closed (it exits), its problems kept.
  private func end(_ device: Device) {
    device.worker.closePipes()
    if !device.worker.waitForExit(deadline: .now() + .seconds(30)) {
      history.problems.append("a device's process did not exit")
      device.worker.process.terminate()
    }
    keepProblems(of: device)
  }

  /// The process's reports, but refusals of the hostile peer's entries (expected: counted).
  private func keepProblems(of device: Device) {
    let reports = device.worker.output.lines.filter { $0.hasPrefix("problem ") }
    let refusals = reports.filter(DeviceHistory.isHostileRefusal)
    history.refusals += refusals.count
    history.problems += reports.filter { !DeviceHistory.isHostileRefusal($0) }
  }

  /// The device's stored values; a value that is no integer (the worker answers "bad") is a problem: a refused
  /// entry replaced it.
  private func values(_ index: Int) -> [Int?] {
    guard let answer = ask(index, "values") else { return [] }
    let words = answer.split(separator: " ")
    for (key, word) in words.enumerated() where word == "bad" {
      history.problems.append("device \(index) holds a value of \(DevicePlan.keys[key]) that does not decode")
    }
    return words.map { Int($0) }
  }

  // MARK: Operations

  private func join(_ index: Int) {
    guard devices[index] == nil else { return }
    let own = plan.ownValues[index].enumerated().compactMap { key, value in value.map { "\(key)=\($0)" } }
    devices[index] = launch(index, own: own)
    ask(index, "start")
  }

  private func noteWhileStopped(_ device: Int) {
    if devices[device]?.online == false { devices[device]?.writesWhileStopped.append(history.writes.count - 1) }
  }

  /// The sync starts again: the writes made while it was stopped that left a key as it was are undone.
  private func restartAfterStop(_ index: Int) {
    guard let device = devices[index] else { return }
    let now = values(index)
    for write in device.writesWhileStopped where now.indices.contains(history.writes[write].key) {
      let key = history.writes[write].key
      if now[key] == device.valuesWhenStopped[key] { history.writes[write].undone = true }
    }
    device.writesWhileStopped = []
    ask(index, "start")
  }

  private func kill(_ index: Int, after delay: Int) {
    guard let device = devices[index] else { return }
    usleep(UInt32(delay))  // the moment of the kill, not synchronisation
    device.worker.process.signal(SIGKILL)
    history.kills += 1
    if !device.worker.waitForExit(deadline: .now() + .seconds(30)) {
      history.problems.append("device \(index)'s process outlived SIGKILL")
    }
    let killed = monotonicNow()
    device.worker.closePipes()
    keepProblems(of: device)
    guard let next = launch(index, own: []) else {
      devices[index] = nil
      return
    }
    (next.online, next.valuesWhenStopped, next.writesWhileStopped) =
      (device.online, device.valuesWhenStopped, device.writesWhileStopped)
    devices[index] = next
    // What the kill lost: the device's last writes of each key, back to the value its suite holds, of those recent
    // enough to be unsaved.
    let now = values(index)
    for key in now.indices {
      while let last = history.writes.lastIndex(where: { $0.device == index && $0.key == key && !$0.undone }),
        history.writes[last].value != now[key],
        killed - (writeMoments[last] ?? 0) < Self.savedWithinNanoseconds
      {
        history.writes[last].undone = true
      }
    }
    if next.online { ask(index, "start") }
  }

  private func noteWrite(operation: Int, device: Int, key: Int, value: Int?) {
    let wall = time + plan.skews[device]
    writeMoments[history.writes.count] = monotonicNow()
    history.writes.append(.init(operation: operation, device: device, key: key, value: value, account: "A", wall: wall))
    noteWhileStopped(device)
  }

  private func apply(_ operation: DevicePlan.Operation, index: Int) {
    switch operation {
    case .write(let device, let key, let value):
      guard devices[device] != nil, ask(device, "write \(key) \(value)") == "ok" else { return }
      noteWrite(operation: index, device: device, key: key, value: value)
    case .remove(let device, let key):
      // Removing a key that holds nothing writes nothing.
      guard devices[device] != nil, ask(device, "remove \(key)") == "held" else { return }
      noteWrite(operation: index, device: device, key: key, value: nil)
    case .offline(let device):
      guard let current = devices[device], current.online else { return }
      current.online = false
      ask(device, "stop")
      current.valuesWhenStopped = values(device)
      current.writesWhileStopped = []
    case .online(let device):
      guard let current = devices[device], !current.online else { return }
      current.online = true
      restartAfterStop(device)
    case .restart(let device):
      if devices[device]?.online == true { ask(device, "restart") }
    case .join(let device):
      join(device)
    case .tick(let milliseconds):
      time += Int64(milliseconds)
      for device in devices.indices where devices[device] != nil { ask(device, "time \(time)") }
    case .kill(let device, let delay):
      kill(device, after: delay)
    case .deliver, .duplicate, .switchAccount:
      break  // the cloud model's
    case .garbage, .forge, .deleteFile, .conflictCopy, .emptyFolder:
      let names = devices.indices.map { devices[$0] == nil ? nil : ask($0, "name").flatMap { $0 == "none" ? nil : $0 } }
      let forgery = HostileFolder(folder: URL(fileURLWithPath: folder)).apply(
        operation, index: index, names: names, time: time, problems: &history.problems)
      if let forgery { history.forgeries.append(forgery) }
    }
  }

  // MARK: Quiescence

  private func waitForIdle() {
    for device in devices.indices where devices[device] != nil {
      if let answer = ask(device, "idle"), answer != "idle" {
        history.problems.append("device \(device)'s sync was not idle within 30 s")
      }
    }
  }

  /// Every device online; synchronized until the values stop changing.
  private func settle() {
    for index in devices.indices where devices[index]?.online == false {
      devices[index]?.online = true
      restartAfterStop(index)
    }
    var last: [[Int?]] = []
    for _ in 0..<50 {
      for device in devices.indices where devices[device] != nil { ask(device, "synchronize") }
      waitForIdle()
      let now = devices.indices.map { devices[$0] == nil ? [] : values($0) }
      if now == last { break }
      last = now
    }
  }

  // MARK: What it left

  private func collect() {
    // What the observers heard first: a read must not stand in for an event they missed.
    history.heard = devices.indices.map { index in
      guard devices[index] != nil, let answer = ask(index, "heard") else {
        return Array(repeating: [], count: DevicePlan.keys.count)
      }
      return answer.split(separator: ";", omittingEmptySubsequences: false).map { heard in
        heard.split(separator: ",").map { Int($0) }
      }
    }
    history.finalValues = devices.indices.map { devices[$0] == nil ? [] : values($0) }
    history.deviceNames = devices.indices.map { index in
      guard devices[index] != nil, let name = ask(index, "name"), name != "none" else { return nil }
      return name
    }
    history.recordEntries(ofFolder: URL(fileURLWithPath: folder))
  }
}
