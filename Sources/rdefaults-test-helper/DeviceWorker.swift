// `rdefaults-test-helper device FOLDER SKEW TIME [KEY=INT ...]`: one device of a process history of the device checker
// (DeviceProcessRun.swift): the suite "device" (under the XDG_CONFIG_HOME it is given) synced with the synced folder
// FOLDER, its clock TIME + SKEW milliseconds (TIME moved by the driver). The KEY=INT values (the device's own, from
// before its sync) are written and saved first. Each line of input "N COMMAND [ARGS]" is answered "N ANSWER"; each
// problem the store reports is printed "problem TEXT" when it is reported.
//
//   time T          the driver's wall time is T              start / stop / restart   the sync (restart: cancel, start)
//   write K V       store V in key number K                  remove K   answers "held" or "none" (before the removal)
//   synchronize     the sync looks at the folder now          idle       answers "idle", or "busy" after 30 s
//   values          the stored values, "nil" for none, "bad" for one that is no Int
//   heard           what each key's observer heard, "1,nil;;5"
//   name            the sync's device name, or "none"
import Dispatch
import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

func runDeviceWorker(_ arguments: [String]) -> Never {
  guard arguments.count >= 3, let skew = Int64(arguments[1]), let start = Int64(arguments[2]),
    let store = DefaultsStore(suiteName: "device")
  else {
    FileHandle.standardError.write(Data("usage: rdefaults-test-helper device FOLDER SKEW TIME [KEY=INT ...]\n".utf8))
    exit(64)
  }
  let output = Guarded(())
  let say = { @Sendable (line: String) in
    output.withLock { _ in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
  }
  store.issueHandler = { say("problem \($0)") }
  func key(_ index: String) -> DefaultsKey<Int?>? {
    Int(index).flatMap { DevicePlan.keys.indices.contains($0) ? DefaultsKey(DevicePlan.keys[$0]) : nil }
  }
  for own in arguments.dropFirst(3) {
    let parts = own.split(separator: "=").map(String.init)
    guard parts.count == 2, let key = key(parts[0]), let value = Int(parts[1]) else { exit(64) }
    store[key] = value
  }
  if arguments.count > 3 {
    do { try store.save() } catch { say("problem the own values were not saved: \(error)") }
  }
  let heard = Guarded<[[Int?]]>(Array(repeating: [], count: DevicePlan.keys.count))
  let observers = DevicePlan.keys.indices.map { index in
    store.property(DefaultsKey<Int?>(DevicePlan.keys[index])).observe { value in
      heard.withLock { $0[index].append(value) }
    }
  }
  let time = Guarded(start)
  var sync: DefaultsSync?
  func startSync() {
    let now: @Sendable () -> Int64 = { time.withLock { $0 } + skew }
    // The folder judges the stamps it reads by the device's clock, as the sync does.
    sync = store.sync(
      DevicePlan.keys.map { DefaultsKey<Int?>($0) }, with: SyncedFolder(URL(fileURLWithPath: arguments[0]), now: now),
      now: now, coalescing: .zero)
  }
  func describe(_ value: Int?) -> String { value.map(String.init) ?? "nil" }
  while let line = readLine() {
    let words = line.split(separator: " ").map(String.init)
    guard words.count >= 2 else { continue }
    let arguments = Array(words.dropFirst(2))
    var answer = "ok"
    switch (words[1], arguments.count) {
    case ("time", 1): time.withLock { $0 = Int64(arguments[0]) ?? $0 }
    case ("start", 0): if sync == nil { startSync() }
    case ("stop", 0):
      sync?.cancel()
      sync = nil
    case ("restart", 0):
      sync?.cancel()
      startSync()
    case ("synchronize", 0): sync?.synchronize()
    case ("write", 2):
      guard let key = key(arguments[0]), let value = Int(arguments[1]) else { answer = "bad"; break }
      store[key] = value
    case ("remove", 1):
      guard let key = key(arguments[0]) else { answer = "bad"; break }
      // The look and the removal in one edit: a pull that lands between them would be removed unrecorded.
      do {
        let held = try store.edit { tx in
          defer { tx.reset(key) }
          return tx[key] != nil
        }
        answer = held ? "held" : "none"
      } catch {
        say("problem the removal of \(key.name) failed: \(error)")
        answer = "none"
      }
    case ("idle", 0): answer = sync.map { waitUntilIdle($0) ? "idle" : "busy" } ?? "idle"
    case ("values", 0):
      let stored = store.storedEntries
      answer = DevicePlan.keys.map { key in
        switch stored[PropertyListKey(key)] {
        case .integer(let value)? where Int(exactly: value) != nil: String(value)
        case nil: "nil"
        default: "bad"
        }
      }.joined(separator: " ")
    case ("heard", 0):
      answer = heard.withLock { $0 }.map { $0.map(describe).joined(separator: ",") }.joined(separator: ";")
    case ("name", 0):
      answer = "none"
      if case .dictionary(let state)? = store.storedEntries[PropertyListKey(DefaultsSync.stateKey)],
        case .string(let name)? = state["device"]
      {
        answer = name
      }
    default: answer = "unknown"
    }
    say("\(words[0]) \(answer)")
  }
  sync?.cancel()
  observers.forEach { $0.cancel() }
  exit(0)
}

/// Waits (on this thread, which is not one of the cooperative pool's) until the sync is idle; false after 30 s.
func waitUntilIdle(_ sync: DefaultsSync) -> Bool {
  let done = DispatchSemaphore(value: 0)
  let idle = Guarded(false)
  Task.detached {
    let result = await sync.waitUntilIdle(timeout: .seconds(30))
    idle.withLock { $0 = result }
    done.signal()
  }
  done.wait()
  return idle.withLock { $0 }
}
