import Foundation
import Synchronization
import TestSupport

@testable import ReactiveDefaults

/// An in-memory store that behaves as Apple's `UserDefaults`: `onWrite` runs inside every write, and the change
/// notification is posted there too.
func appleLikeStore(
  onWrite: @escaping @Sendable (DefaultsStore, String) -> Void
) -> (DefaultsStore, MemoryStorage) {
  let box = Locked<DefaultsStore?>(nil)
  let storage = MemoryStorage(
    behavior: .init(
      postsChangesInsideWrites: true,
      onWrite: { key in
        if let store = box.withLock({ $0 }) { onWrite(store, key) }
      },
      reportsKeyChanges: true))
  let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
  box.withLock { $0 = store }
  return (store, storage)
}

/// Runs `body` on a thread of its own; false when it has not finished within `timeout` seconds (a deadlock). The test
/// waits suspended, holding no thread.
func finishes(timeout: Double = 30, _ body: @escaping @Sendable () -> Void) async -> Bool {
  let done = Recorder<Bool>()
  Thread {
    body()
    done.append(true)
  }.start()
  return await done.wait(timeout: timeout) { !$0.isEmpty }
}
