import Dispatch
import Foundation
@_spi(Tools) import ReactiveDefaults

/// `syncwrite DOMAIN FOLDER KEY INT [--saved]`: syncs KEY of the suite DOMAIN with the synced folder FOLDER, writes INT
/// to it, prints "synced" once the folder's newest entry of KEY holds INT (at most 30 s: else "timeout"), then waits
/// for a line of input (or to be killed) and exits. With `--saved`: prints "saved" once the write is in the suite's
/// file (its sync waits an hour before it pushes), then waits to be killed.
func runSyncWrite(_ arguments: [String]) -> Never {
  let savedOnly = arguments.count == 5 && arguments[4] == "--saved"
  guard arguments.count == 4 || savedOnly, let store = DefaultsStore(suiteName: arguments[0]),
    let value = Int(arguments[3])
  else {
    FileHandle.standardError.write(Data("usage: rdefaults-test-helper syncwrite DOMAIN FOLDER KEY INT\n".utf8))
    exit(64)
  }
  let key = DefaultsKey<Int>(arguments[2], default: 0)
  let folder = SyncedFolder(URL(fileURLWithPath: arguments[1]))
  // `--saved`: the sync waits an hour before it pushes, so that the kill comes first.
  let sync =
    savedOnly
    ? store.sync(
      [key.name], with: folder, now: { Int64(Date().timeIntervalSince1970 * 1000) }, coalescing: .seconds(3600))
    : store.sync(key, with: folder)
  if savedOnly {
    // The start's own look at the remote done first: the write is then a change only the hour-long wait pushes.
    let started = DispatchSemaphore(value: 0)
    Task.detached {
      _ = await sync.waitUntilIdle(timeout: .seconds(30))
      started.signal()
    }
    started.wait()
  }
  store[key] = value
  if savedOnly {
    store.flush()
    FileHandle.standardOutput.write(Data("saved\n".utf8))
    while true { pause() }
  }
  let deadline = Date().addingTimeInterval(30)
  var synced = false
  // A bounded wait for the entry (the helper has no other way to see the push land).
  while !synced && Date() < deadline {
    if case .dictionary(let fields)? = folder.entries()[key.name], fields["v"] == .integer(Int128(value)) {
      synced = true
    } else {
      usleep(5_000)
    }
  }
  FileHandle.standardOutput.write(Data((synced ? "synced\n" : "timeout\n").utf8))
  _ = readLine()
  withExtendedLifetime(sync) {}
  exit(synced ? 0 : 1)
}
