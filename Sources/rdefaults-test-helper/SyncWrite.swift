import Foundation
import ReactiveDefaults

/// `syncwrite DOMAIN FOLDER KEY INT`: syncs KEY of the suite DOMAIN with the synced folder FOLDER, writes INT to it,
/// prints "synced" once the folder's newest entry of KEY holds INT (at most 30 s: else "timeout"), then waits for a
/// line of input (or to be killed) and exits.
func runSyncWrite(_ arguments: [String]) -> Never {
  guard arguments.count == 4, let store = DefaultsStore(suiteName: arguments[0]), let value = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: rdefaults-test-helper syncwrite DOMAIN FOLDER KEY INT\n".utf8))
    exit(64)
  }
  let key = DefaultsKey<Int>(arguments[2], default: 0)
  let folder = SyncedFolder(URL(fileURLWithPath: arguments[1]))
  let sync = store.sync(key, with: folder)
  store[key] = value
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
